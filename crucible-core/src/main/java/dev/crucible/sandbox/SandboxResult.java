package dev.crucible.sandbox;

/**
 * What one sandboxed run did. Immutable.
 *
 * @param exitCode the program's exit code, or 128 + signal when a signal ended it
 * @param signal the signal that ended the program, or null
 * @param stdout kept standard output (see {@link #stdoutTruncated})
 * @param stderr kept standard error
 * @param stdoutTruncated whether stdout passed the cap; the head and the last 4 KiB are kept
 * @param stderrTruncated whether stderr passed the cap
 * @param wallMs wall-clock milliseconds from start to exit
 * @param cpuMs CPU milliseconds of every process of the run, or -1 when not measurable (no cgroup)
 * @param memoryBytes peak memory of the run, or -1 when not measurable
 * @param timedOut killed at the wall-clock limit
 * @param cpuExceeded killed at the CPU-time limit
 * @param oomKilled the memory cgroup killed a process of the run
 * @param sandboxError why the sandbox itself failed (never the program's fault), or null
 * @param untaken why the program never started, or null when it ran (or may have): the sandbox did not take it, so
 *     the caller may run it again in a new sandbox; always with a {@code sandboxError}
 */
public record SandboxResult(
        int exitCode,
        Integer signal,
        byte[] stdout,
        byte[] stderr,
        boolean stdoutTruncated,
        boolean stderrTruncated,
        long wallMs,
        long cpuMs,
        long memoryBytes,
        boolean timedOut,
        boolean cpuExceeded,
        boolean oomKilled,
        String sandboxError,
        Untaken untaken) {

    /** Why a sandbox never took its program. */
    public enum Untaken {
        /** A part did not answer (a stopped warm agent, a stopped zygote): it is killed and replaced. */
        STUCK,
        /** Its zygote, busy on a loaded host, had not forked it yet: slow, not stuck; nothing is replaced. */
        BEHIND,
        /** It ended before it took the program, its cgroup having used no CPU since (killed from outside). */
        DIED
    }

    /** Whether the program never started, so that running it again elsewhere is harmless. */
    public boolean neverRan() {
        return untaken != null;
    }

    /** A result of a run whose program did run (or may have): {@link #untaken} null. */
    @SuppressWarnings("checkstyle:ParameterNumber") // a record's components, all of a run's measures: a builder would only rename them
    public SandboxResult(int exitCode, Integer signal, byte[] stdout, byte[] stderr, boolean stdoutTruncated,
            boolean stderrTruncated, long wallMs, long cpuMs, long memoryBytes, boolean timedOut, boolean cpuExceeded,
            boolean oomKilled, String sandboxError) {
        this(exitCode, signal, stdout, stderr, stdoutTruncated, stderrTruncated, wallMs, cpuMs, memoryBytes, timedOut,
                cpuExceeded, oomKilled, sandboxError, null);
    }

    /** The verdict, by the precedence of design.md: our fault, then time, output, memory, the program's exit. */
    public Verdict verdict() {
        if (sandboxError != null) {
            return Verdict.SANDBOX_ERROR;
        }
        if (timedOut || cpuExceeded) {
            return Verdict.TIMEOUT;
        }
        if (stdoutTruncated || stderrTruncated) {
            return Verdict.OUTPUT_LIMIT;
        }
        boolean failed = exitCode != 0 || signal != null;
        if (oomKilled && failed) {
            return Verdict.MEMORY_LIMIT;
        }
        return failed ? Verdict.RUNTIME_ERROR : Verdict.OK;
    }
}
