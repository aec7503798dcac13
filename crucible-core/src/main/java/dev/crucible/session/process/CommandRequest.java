package dev.crucible.session.process;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * {@code POST /v1/sessions/{id}/commands} as a user sends it: a shell line ({@code command}, run by {@code /bin/sh
 * -c}) or an argv, with variables on top of the session's, a directory ({@code /workspace} when absent), a time limit
 * (the session's when absent; none for a background command) and a whole stdin. {@code background} answers at once
 * with the process, which runs on; {@code stdin_open} (background only) keeps its stdin open after {@code stdin} for
 * {@code POST …/processes/{pid}/stdin}; {@code pty} (background only) runs it on a terminal of that size.
 */
public record CommandRequest(
        @JsonProperty("command") String command,
        @JsonProperty("argv") List<String> argv,
        @JsonProperty("env") Map<String, String> env,
        @JsonProperty("cwd") String cwd,
        @JsonProperty("timeout_ms") Long timeoutMs,
        @JsonProperty("stdin") String stdin,
        @JsonProperty("user") String user,
        @JsonProperty("background") Boolean background,
        @JsonProperty("stdin_open") Boolean stdinOpen,
        @JsonProperty("pty") Terminal pty) {

    /** A request without {@code stdin_open} or {@code pty}. */
    public CommandRequest(String command, List<String> argv, Map<String, String> env, String cwd, Long timeoutMs,
            String stdin, String user, Boolean background) {
        this(command, argv, env, cwd, timeoutMs, stdin, user, background, null, null);
    }

    /** A shell line with every default. */
    public static CommandRequest shell(String line) {
        return new CommandRequest(line, null, null, null, null, null, null, null, null, null);
    }
}
