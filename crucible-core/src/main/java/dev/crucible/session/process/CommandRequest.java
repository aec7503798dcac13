package dev.crucible.session.process;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.List;
import java.util.Locale;
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
        @JsonProperty("user") User user,
        @JsonProperty("background") Boolean background,
        @JsonProperty("stdin_open") Boolean stdinOpen,
        @JsonProperty("pty") Terminal pty) {

    /** A request without {@code stdin_open} or {@code pty}. */
    public CommandRequest(String command, List<String> argv, Map<String, String> env, String cwd, Long timeoutMs,
            String stdin, User user, Boolean background) {
        this(command, argv, env, cwd, timeoutMs, stdin, user, background, null, null);
    }

    /** Whom a command runs as; {@link #wireName()} on the wire. */
    public enum User {
        /** uid 1000, the session's user (the default). */
        USER,
        /** Root of the session's own user namespace, in a session with a root of its own. */
        ROOT;

        @JsonValue
        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** A shell line with every default. */
    public static CommandRequest shell(String line) {
        return new CommandRequest(line, null, null, null, null, null, null, null, null, null);
    }
}
