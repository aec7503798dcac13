package dev.crucible.sandbox;

/**
 * Resource limits of one sandboxed run. Immutable; all values are positive.
 *
 * @param timeoutMs wall-clock limit in milliseconds; the whole process tree is killed when it passes
 * @param cpuMs CPU time limit in milliseconds, summed over every process of the run (cgroup cpuacct)
 * @param memoryMb memory limit in MiB (memory cgroup; tmpfs pages count against it)
 * @param outputBytes cap per output stream; a run that writes more is killed ({@code output_limit})
 * @param pids maximum number of tasks (processes and threads) alive at once
 */
public record Limits(long timeoutMs, long cpuMs, int memoryMb, int outputBytes, int pids) {

    /** Defaults for a stateless run, as the hostile cases were verified with (see docs/sandbox-recipe.md, Limits). */
    public static final Limits DEFAULT = new Limits(5_000, 5_000, 256, 64 * 1024, 64);

    /** The largest values a caller may ask for. */
    public static final Limits MAXIMUM = new Limits(120_000, 120_000, 4096, 16 * 1024 * 1024, 1024);

    /**
     * What a run's answer may take beyond its {@link #timeoutMs}, end to end: waiting for a turn is bounded by the
     * timeout plus this, and so is a run whose sandbox got stuck (a warm agent or zygote that does not take its program
     * within 2 s is killed, replaced and the run started again; a killed sandbox that does not end within 3 s is given
     * up). docs/limits.md, "Deadlines".
     */
    public static final long GRACE_MS = 5_000;

    /** The smallest values a caller may ask for. */
    public static final Limits MINIMUM = new Limits(1, 1, 16, 1, 8);

    public Limits {
        if (timeoutMs <= 0 || cpuMs <= 0 || memoryMb <= 0 || outputBytes <= 0 || pids <= 0) {
            throw new IllegalArgumentException("limits must be positive");
        }
    }

    /**
     * Returns these limits with each non-null override applied.
     *
     * @throws IllegalArgumentException naming the first value outside {@link #MINIMUM}..{@link #MAXIMUM}
     */
    public Limits with(Long timeoutMs, Long cpuMs, Integer memoryMb, Integer outputBytes, Integer pids) {
        Limits merged = new Limits(
                checked("timeout_ms", timeoutMs, this.timeoutMs, MINIMUM.timeoutMs, MAXIMUM.timeoutMs),
                checked("cpu_ms", cpuMs, this.cpuMs, MINIMUM.cpuMs, MAXIMUM.cpuMs),
                (int) checked("memory_mb", memoryMb == null ? null : memoryMb.longValue(), this.memoryMb,
                        MINIMUM.memoryMb, MAXIMUM.memoryMb),
                (int) checked("output_bytes", outputBytes == null ? null : outputBytes.longValue(), this.outputBytes,
                        MINIMUM.outputBytes, MAXIMUM.outputBytes),
                (int) checked("pids", pids == null ? null : pids.longValue(), this.pids, MINIMUM.pids, MAXIMUM.pids));
        // a CPU budget is never larger than the wall clock allows unless asked for explicitly
        return cpuMs == null && timeoutMs != null ? new Limits(merged.timeoutMs, merged.timeoutMs, merged.memoryMb,
                merged.outputBytes, merged.pids) : merged;
    }

    private static long checked(String name, Long value, long fallback, long min, long max) {
        if (value == null) {
            return fallback;
        }
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", got " + value);
        }
        return value;
    }
}
