package dev.crucible.client;

/**
 * The answer of {@code POST /v1/sessions/{id}/commands}: the command's exit code (null when a signal killed it), its
 * streams (each cut at the session's {@code output_bytes}), whether its time limit killed it, its pid in the sandbox.
 */
public record CommandResult(Integer exitCode, Integer signal, String stdout, String stderr, boolean stdoutTruncated,
        boolean stderrTruncated, boolean timedOut, long durationMs, long pid) {}
