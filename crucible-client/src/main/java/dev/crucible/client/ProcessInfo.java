package dev.crucible.client;

import java.util.List;

/**
 * A background process of a session ({@code POST /v1/sessions/{id}/commands} with {@code background}): its pid in
 * the sandbox, what it runs, whether it runs, how it ended ({@code exitCode}, or the {@code signal} that killed it;
 * {@code lost} when its sandbox ended under it), how much it wrote ({@code droppedBytes} of it no longer kept), and
 * its terminal's size when it runs on one.
 */
public record ProcessInfo(long pid, List<String> argv, String cwd, String startedAt, boolean running, Integer exitCode,
        Integer signal, boolean timedOut, boolean lost, boolean stdinOpen, long outputBytes, long droppedBytes,
        Pty pty, int terminals) {

    /** The size of the terminal a process runs on ({@code pty}); null for one on pipes. */
    public record Pty(int rows, int cols) {}

    /**
     * A background process's output from an offset ({@code GET …/processes/{pid}/output}): what was kept of stdout
     * and stderr from {@code from}, the bytes overwritten before they were read ({@code missedBytes}), the offset to
     * ask from {@code next}, and whether it has {@code ended} with all of its output read.
     */
    public record Output(long pid, long from, long next, long missedBytes, String stdout, String stderr,
            boolean ended, ProcessInfo process) {}
}
