package dev.crucible.session.process;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * {@code POST /v1/sessions/{id}/commands} as a user sends it: a shell line ({@code command}, run by {@code /bin/sh
 * -c}) or an argv, with variables on top of the session's, a directory ({@code /workspace} when absent), a time limit
 * (the session's when absent) and a whole stdin.
 */
public record CommandRequest(
        @JsonProperty("command") String command,
        @JsonProperty("argv") List<String> argv,
        @JsonProperty("env") Map<String, String> env,
        @JsonProperty("cwd") String cwd,
        @JsonProperty("timeout_ms") Long timeoutMs,
        @JsonProperty("stdin") String stdin,
        @JsonProperty("user") String user,
        @JsonProperty("background") Boolean background) {

    /** A shell line with every default. */
    public static CommandRequest shell(String line) {
        return new CommandRequest(line, null, null, null, null, null, null, null);
    }
}
