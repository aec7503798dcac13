package dev.crucible.session.process;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * How a command ended: its exit code, or the signal that killed it; what it wrote, each stream cut at the session's
 * output cap; whether its time limit ended it.
 *
 * @param exitCode its exit code, or null when a signal killed it
 * @param signal the signal that killed it, or null
 * @param timedOut whether it was killed (with its process group) for running past its {@code timeout_ms}
 * @param durationMs from its start to its end, as the server saw them
 * @param pid its pid in the session's sandbox
 */
public record CommandResult(
        @JsonProperty("exit_code") Integer exitCode,
        @JsonProperty("signal") Integer signal,
        @JsonProperty("stdout") String stdout,
        @JsonProperty("stderr") String stderr,
        @JsonProperty("stdout_truncated") boolean stdoutTruncated,
        @JsonProperty("stderr_truncated") boolean stderrTruncated,
        @JsonProperty("timed_out") boolean timedOut,
        @JsonProperty("duration_ms") long durationMs,
        @JsonProperty("pid") long pid) {}
