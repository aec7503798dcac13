package dev.crucible.client;

import java.util.List;

/**
 * The answer of {@code POST /v1/sessions/{id}/execute}: {@code status} {@code ok}, {@code error}, {@code timeout},
 * {@code incomplete}, {@code memory_limit} …; {@code result} is the repr of the last expression; {@code display} holds
 * rich outputs such as matplotlib figures ({@code image/png}, base64).
 */
public record CellResult(String status, String stdout, String stderr, boolean stdoutTruncated,
        boolean stderrTruncated, String result, List<Display> display, CellError error, int executionCount,
        long wallMs, boolean restarted, boolean resumed, Integer replayed) {

    public record Display(String mime, String data) {}

    public record CellError(String name, String message, String traceback) {}
}
