package dev.crucible.session.process;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * A background process of a session as the API shows it.
 *
 * @param pid its pid in the session's sandbox: what the process routes take
 * @param argv what it runs (a shell line is {@code ["/bin/sh", "-c", line]})
 * @param startedAt when it started (ISO-8601)
 * @param running whether it is still running; once not, {@code exit_code} or {@code signal} says how it ended
 * @param exitCode its exit code, or null while it runs or when a signal killed it
 * @param signal the signal that killed it, or null
 * @param timedOut whether its {@code timeout_ms} ended it
 * @param lost whether its sandbox ended under it (the session's interpreter died, was restarted, or the server stopped)
 * @param stdinOpen whether {@code POST …/stdin} still reaches it
 * @param outputBytes every byte it wrote to stdout and stderr
 * @param droppedBytes the oldest of those no longer kept (only the last {@link Supervisor#RING_BYTES} are)
 * @param pty its terminal's size now, or null when it runs on pipes
 * @param terminals the terminal WebSockets attached to it now
 */
public record ProcessInfo(
        @JsonProperty("pid") long pid,
        @JsonProperty("argv") List<String> argv,
        @JsonProperty("cwd") String cwd,
        @JsonProperty("started_at") String startedAt,
        @JsonProperty("running") boolean running,
        @JsonProperty("exit_code") Integer exitCode,
        @JsonProperty("signal") Integer signal,
        @JsonProperty("timed_out") boolean timedOut,
        @JsonProperty("lost") boolean lost,
        @JsonProperty("stdin_open") boolean stdinOpen,
        @JsonProperty("output_bytes") long outputBytes,
        @JsonProperty("dropped_bytes") long droppedBytes,
        @JsonProperty("pty") Terminal pty,
        @JsonProperty("terminals") int terminals) {}
