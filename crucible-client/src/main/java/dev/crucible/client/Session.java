package dev.crucible.client;

import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.JsonNode;

/**
 * One session of the server (the TypeScript SDK's {@code Session}): a persistent interpreter in a long-lived sandbox
 * of its own, its commands, background processes and files, its ports; it can be paused, resumed, forked, snapshotted
 * and, in an image, committed. Made by {@code crucible.sessions().create(…)}, or {@code open(id)} for one that exists.
 * Every call goes to the server; {@link #info()} is what the last answer that carried the session said.
 *
 * <pre>{@code
 * Session session = crucible.sessions().create(Session.Request.of("python"));
 * session.run("x = 41");
 * session.run("x + 1").result();                                       // "42"
 * session.commands().run(Session.Command.shell("ls /workspace")).stdout();
 * session.files().write("data/in.csv", bytes);
 * session.delete();
 * }</pre>
 */
public final class Session {
    private final Transport http;
    private final String id;
    private final String at;
    private volatile SessionInfo info;

    Session(Transport http, String id, SessionInfo info) {
        this.http = http;
        this.id = id;
        this.at = "/v1/sessions/" + Transport.segment(id);
        this.info = info;
    }

    private <T> T call(String method, String path, Object body, TypeReference<T> type) {
        return http.call(method, at + path, body, type);
    }

    public String id() {
        return id;
    }

    /** What the last answer that carried the session said; null for one opened by id and not yet refreshed. */
    public SessionInfo info() {
        return info;
    }

    /** {@code GET /v1/sessions/{id}}: the session now, its processes and ports included. */
    public SessionInfo refresh() {
        info = call("GET", "", null, new TypeReference<>() {});
        return info;
    }

    /** Runs a cell in {@code auto} mode: its statements, then the value of its last expression. */
    public CellResult run(String code) {
        return run(Cell.of(code));
    }

    /** Runs a cell with its own mode and timeout. */
    public CellResult run(Cell cell) {
        return call("POST", "/execute", cell, new TypeReference<>() {});
    }

    /** Asks the running cell to stop (KeyboardInterrupt); true when one was running. */
    public boolean interrupt() {
        JsonNode answer = call("POST", "/interrupt", null, new TypeReference<>() {});
        return answer.path("interrupted").asBoolean(false);
    }

    /** A fresh interpreter (variables lost, files kept). */
    public SessionInfo restart() {
        info = call("POST", "/restart", null, new TypeReference<>() {});
        return info;
    }

    public void delete() {
        call("DELETE", "", null, new TypeReference<JsonNode>() {});
    }

    /** Releases its memory, keeping the rest (behind gVisor its sandbox is saved whole first); see {@link #resume}. */
    public SessionInfo.Pause pause() {
        return call("POST", "/pause", null, new TypeReference<>() {});
    }

    /** Brings a paused session back now (its next call would too); {@code restored} says what came back. */
    public SessionInfo.Pause resume() {
        return call("POST", "/resume", null, new TypeReference<>() {});
    }

    /** {@code count} new sessions, each with a copy of its files (and of its memory behind gVisor). */
    public List<Session> fork(int count) {
        SessionInfo.Fork forked = call("POST", "/fork", Map.of("count", count), new TypeReference<>() {});
        return forked.forks().stream().map(f -> new Session(http, f.id(), f)).toList();
    }

    /** A named snapshot of it; {@code sessions().create(Session.Request.fromSnapshot(name))} makes one from it. */
    public SessionInfo.Snapshot snapshot(String name) {
        return call("POST", "/snapshots", Map.of("name", name), new TypeReference<>() {});
    }

    /** Its workspace as a new image {@code tag} (a session in an image only). */
    public SessionInfo.Commit commit(String tag) {
        return call("POST", "/commit", Map.of("tag", tag), new TypeReference<>() {});
    }

    /** The TCP ports something listens on in its sandbox now. */
    public List<SessionInfo.Port> ports() {
        record Page(List<SessionInfo.Port> ports) {}
        return call("GET", "/ports", null, new TypeReference<Page>() {}).ports();
    }

    /** A tokenless link to {@code port} for {@code ttlS} s (a day at most, within the session's life). */
    public SessionInfo.Preview preview(int port, long ttlS) {
        return call("POST", "/previews", Map.of("port", port, "ttl_s", ttlS), new TypeReference<>() {});
    }

    /** Narrows its egress for good to {@code allow}; an empty list locks it. */
    public SessionInfo lockNetwork(List<String> allow) {
        info = call("POST", "/network", Map.of("allow", allow), new TypeReference<>() {});
        return info;
    }

    public Commands commands() {
        return new Commands();
    }

    public Processes processes() {
        return new Processes();
    }

    public Files files() {
        return new Files();
    }

    /** The body of {@code POST /v1/sessions/{id}/execute}: {@code mode} auto, exec or single; null fields default. */
    public record Cell(String code, String mode, Long timeoutMs) {
        public static Cell of(String code) {
            return new Cell(code, null, null);
        }
    }

    /**
     * The body of {@code POST /v1/sessions}; null fields take the server's defaults. {@code restore} none or replay,
     * {@code onIdle} delete or pause, {@code isolation} namespaces or gvisor (at least the runtime's own).
     */
    public record Request(String language, Limits limits, Long idleTimeoutS, String restore, String image,
            ExecuteRequest.Network network, String onIdle, String snapshot, String isolation) {
        /** A session in {@code language} ("python" when null) with the server's defaults. */
        public static Request of(String language) {
            return new Request(language, null, null, null, null, null, null, null, null);
        }

        /** A session made from the token's snapshot {@code name} (its language, image and restore). */
        public static Request fromSnapshot(String name) {
            return new Request(null, null, null, null, null, null, null, name, null);
        }

        public Request withLimits(Limits l) {
            return new Request(language, l, idleTimeoutS, restore, image, network, onIdle, snapshot, isolation);
        }

        public Request withIdleTimeoutS(long s) {
            return new Request(language, limits, s, restore, image, network, onIdle, snapshot, isolation);
        }

        public Request withRestore(String mode) {
            return new Request(language, limits, idleTimeoutS, mode, image, network, onIdle, snapshot, isolation);
        }

        /** In {@code reference}, an image of the server's store (e.g. {@code python:3.12-slim}). */
        public Request withImage(String reference) {
            return new Request(language, limits, idleTimeoutS, restore, reference, network, onIdle, snapshot,
                    isolation);
        }

        /** With egress to {@code allow} ({@code HOST[:PORT]}), within the server's list. */
        public Request withNetwork(List<String> allow) {
            return new Request(language, limits, idleTimeoutS, restore, image, new ExecuteRequest.Network(null,
                    allow), onIdle, snapshot, isolation);
        }

        public Request withOnIdle(String action) {
            return new Request(language, limits, idleTimeoutS, restore, image, network, action, snapshot, isolation);
        }

        public Request withIsolation(String tier) {
            return new Request(language, limits, idleTimeoutS, restore, image, network, onIdle, snapshot, tier);
        }
    }

    /** A session's limits as a request sets them; null keeps the server's default. */
    public record Limits(Integer memoryMb, Integer pids, Double cpus, Long timeoutMs, Integer outputBytes) {}

    /**
     * The body of {@code POST /v1/sessions/{id}/commands}: a shell line or an argv, its environment on top of the
     * session's, working directory, timeout, stdin, user ({@code user} or {@code root}); for one started in the
     * background, whether its stdin stays open and the terminal it runs on. Null fields default.
     */
    public record Command(String command, List<String> argv, Map<String, String> env, String cwd, Long timeoutMs,
            String stdin, String user, Boolean background, Boolean stdinOpen, ProcessInfo.Pty pty) {
        /** {@code /bin/sh -c line}. */
        public static Command shell(String line) {
            return new Command(line, null, null, null, null, null, null, null, null, null);
        }

        /** The program (looked up on PATH) and its arguments. */
        public static Command argv(String... argv) {
            return new Command(null, List.of(argv), null, null, null, null, null, null, null, null);
        }

        public Command withEnv(Map<String, String> vars) {
            return new Command(command, argv, vars, cwd, timeoutMs, stdin, user, background, stdinOpen, pty);
        }

        public Command withCwd(String dir) {
            return new Command(command, argv, env, dir, timeoutMs, stdin, user, background, stdinOpen, pty);
        }

        public Command withTimeoutMs(long ms) {
            return new Command(command, argv, env, cwd, ms, stdin, user, background, stdinOpen, pty);
        }

        public Command withStdin(String input) {
            return new Command(command, argv, env, cwd, timeoutMs, input, user, background, stdinOpen, pty);
        }

        public Command withUser(String who) {
            return new Command(command, argv, env, cwd, timeoutMs, stdin, who, background, stdinOpen, pty);
        }

        /** In the background: keep its stdin open after {@code stdin}, for {@link Processes#writeStdin}. */
        public Command withStdinOpen() {
            return new Command(command, argv, env, cwd, timeoutMs, stdin, user, background, true, pty);
        }

        /** In the background: on a terminal of this size. */
        public Command withPty(int rows, int cols) {
            return new Command(command, argv, env, cwd, timeoutMs, stdin, user, background, stdinOpen,
                    new ProcessInfo.Pty(rows, cols));
        }

        Command withBackground(Boolean inBackground) {
            return new Command(command, argv, env, cwd, timeoutMs, stdin, user, inBackground, stdinOpen, pty);
        }
    }

    /** Commands in the session's sandbox, beside its interpreter ({@code POST …/commands}). */
    public final class Commands {
        private Commands() {}

        /** Runs a shell line ({@code /bin/sh -c}) to its end. */
        public CommandResult run(String shellLine) {
            return run(Command.shell(shellLine));
        }

        /** Runs a command to its end. */
        public CommandResult run(Command command) {
            return call("POST", "/commands", command.withBackground(null), new TypeReference<>() {});
        }

        /** Starts a command in the background: it runs on, its output kept for {@link Processes#output}. */
        public ProcessInfo start(Command command) {
            return call("POST", "/commands", command.withBackground(true), new TypeReference<>() {});
        }
    }

    /** The session's background processes. */
    public final class Processes {
        private Processes() {}

        /** Running and ended, oldest first. */
        public List<ProcessInfo> list() {
            record Page(List<ProcessInfo> processes) {}
            return call("GET", "/processes", null, new TypeReference<Page>() {}).processes();
        }

        /** Its output from {@code from} (0: the oldest kept; then the last {@code next}), waiting up to waitMs. */
        public ProcessInfo.Output output(long pid, long from, long waitMs) {
            return call("GET", "/processes/" + pid + "/output?from=" + from + "&wait_ms=" + waitMs, null,
                    new TypeReference<>() {});
        }

        /** Writes {@code data} to its stdin (started with {@code stdinOpen}), closing it when asked; bytes written. */
        public long writeStdin(long pid, String data, boolean close) {
            JsonNode answer = call("POST", "/processes/" + pid + "/stdin", Map.of("data", data == null ? "" : data,
                    "close", close), new TypeReference<>() {});
            return answer.path("written").asLong();
        }

        /** Sends {@code signal} ({@code "TERM"}, {@code "KILL"}, …) to its process group; false if it had ended. */
        public boolean signal(long pid, String signal) {
            JsonNode answer = call("POST", "/processes/" + pid + "/signal", Map.of("signal", signal),
                    new TypeReference<>() {});
            return answer.path("signalled").asBoolean(false);
        }

        /** Sizes the terminal of one started with a {@code pty}; false if it had ended. */
        public boolean resize(long pid, int rows, int cols) {
            JsonNode answer = call("POST", "/processes/" + pid + "/resize", Map.of("rows", rows, "cols", cols),
                    new TypeReference<>() {});
            return answer.path("resized").asBoolean(false);
        }
    }

    /** The session's files: a path relative to its {@code /workspace}, or absolute (any path, as its user). */
    public final class Files {
        private Files() {}

        private String file(String path) {
            return path.startsWith("/") ? "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8)
                    : "/files/" + Transport.path(path);
        }

        public void write(String path, byte[] data) {
            http.send(http.request(at + file(path)).header("Content-Type", "application/octet-stream")
                    .PUT(HttpRequest.BodyPublishers.ofByteArray(data)));
        }

        public byte[] read(String path) {
            return http.send(http.request(at + file(path)).GET());
        }

        /** The entries under {@code dir} of the workspace ("" or null: its root), or of an absolute directory. */
        public List<FileEntry> list(String dir) {
            record Page(List<FileEntry> files) {}
            String query = dir == null || dir.isEmpty() ? "" : "?dir=" + URLEncoder.encode(dir, StandardCharsets.UTF_8);
            return call("GET", "/files" + query, null, new TypeReference<Page>() {}).files();
        }

        public void delete(String path) {
            call("DELETE", file(path), null, new TypeReference<JsonNode>() {});
        }
    }
}
