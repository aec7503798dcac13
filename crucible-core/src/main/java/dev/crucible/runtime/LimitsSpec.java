package dev.crucible.runtime;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.sandbox.Limits;

/**
 * Optional limit overrides as they appear on the wire and in TOML ({@code limits = { timeout_ms = 10000 }}); a null
 * field keeps the base value.
 */
public record LimitsSpec(
        @JsonProperty("timeout_ms") Long timeoutMs,
        @JsonProperty("cpu_ms") Long cpuMs,
        @JsonProperty("memory_mb") Integer memoryMb,
        @JsonProperty("output_bytes") Integer outputBytes,
        @JsonProperty("pids") Integer pids) {

    /**
     * Applies these overrides to {@code base}.
     *
     * @throws IllegalArgumentException naming the first value out of range
     */
    public Limits applyTo(Limits base) {
        return base.with(timeoutMs, cpuMs, memoryMb, outputBytes, pids);
    }
}
