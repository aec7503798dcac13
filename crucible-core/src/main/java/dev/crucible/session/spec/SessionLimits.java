package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;

/**
 * Limits of one session: memory, tasks and CPU quota for the whole session (its cgroup), and per cell a wall-clock
 * timeout and an output cap per stream.
 *
 * @param memoryMb memory of the whole session in MiB (interpreter, children, /tmp)
 * @param pids tasks alive at once
 * @param cpus CPU quota in cores
 * @param timeoutMs a cell's wall-clock limit; past it the cell is interrupted (SIGINT), the session kept
 * @param outputBytes cap per stream per cell; past it the output is cut (and flagged), the cell goes on
 */
public record SessionLimits(
        @JsonProperty("memory_mb") int memoryMb,
        @JsonProperty("pids") int pids,
        @JsonProperty("cpus") double cpus,
        @JsonProperty("timeout_ms") long timeoutMs,
        @JsonProperty("output_bytes") int outputBytes) {

    public static final SessionLimits DEFAULT = new SessionLimits(512, 128, 1.0, 30_000, 1024 * 1024);
    public static final SessionLimits MAXIMUM = new SessionLimits(8192, 1024,
            Runtime.getRuntime().availableProcessors(), 600_000, 16 * 1024 * 1024);
    public static final SessionLimits MINIMUM = new SessionLimits(32, 16, 0.05, 1, 1);

    /**
     * These limits with each non-null override applied.
     *
     * @throws RequestException ({@code invalid_limits}) naming the first value out of range
     */
    public SessionLimits with(Integer memoryMb, Integer pids, Double cpus, Long timeoutMs, Integer outputBytes) {
        return new SessionLimits(
                (int) check("memory_mb", memoryMb, this.memoryMb, MINIMUM.memoryMb, MAXIMUM.memoryMb),
                (int) check("pids", pids, this.pids, MINIMUM.pids, MAXIMUM.pids),
                check("cpus", cpus, this.cpus, MINIMUM.cpus, MAXIMUM.cpus),
                (long) check("timeout_ms", timeoutMs, this.timeoutMs, MINIMUM.timeoutMs, MAXIMUM.timeoutMs),
                (int) check("output_bytes", outputBytes, this.outputBytes, MINIMUM.outputBytes, MAXIMUM.outputBytes));
    }

    private static double check(String name, Number value, double fallback, double min, double max) {
        if (value == null) {
            return fallback;
        }
        double v = value.doubleValue();
        if (!(v >= min && v <= max)) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, name + " must be between " + format(min) + " and "
                    + format(max) + ", got " + value);
        }
        return v;
    }

    private static String format(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
}
