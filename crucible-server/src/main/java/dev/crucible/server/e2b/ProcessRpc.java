package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.http.JsonObject;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionProcesses;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.process.Terminal;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * envd's {@code process.Process} service (its {@code spec/envd/process/process.proto}) over the session's background
 * processes: {@code Start} and {@code Connect} are server streams of {@code start}, {@code data} (base64 stdout, stderr
 * or pty bytes), {@code keepalive} and {@code end} events; {@code SendInput}, {@code CloseStdin}, {@code SendSignal},
 * {@code List} and {@code Update} (a terminal's size) are unary. A process outlives the stream that started it (E2B's
 * {@code disconnect}); {@code Connect-Timeout-Ms} is its time limit, and a stream whose process it ended ends in
 * {@code deadline_exceeded}.
 */
final class ProcessRpc {
    /** How long a stream waits for output before it sends a keepalive event. */
    static final long KEEPALIVE_MS = 15_000;
    private static final int CHUNK = 64 * 1024;

    private final SessionManager sessions;
    private final Connect connect;

    ProcessRpc(SessionManager sessions, Connect connect) {
        this.sessions = sessions;
        this.connect = connect;
    }

    void call(String method, Envd.Call call, HttpServletRequest req, HttpServletResponse res) throws IOException {
        SessionProcesses processes = sessions.processes(call.sandbox().owner(), call.sandbox().id());
        try {
            switch (method) {
                case "Start", "Connect" -> streaming(method, call, processes, req, res);
                case "SendInput" -> {
                    JsonNode m = connect.unary(req);
                    JsonNode input = m.path("input");
                    String data = input.has("stdin") ? input.get("stdin").asString() : input.path("pty").asString("");
                    processes.write(pid(m), bytes(data), false);
                    connect.answer(res, Map.of());
                }
                case "CloseStdin" -> {
                    processes.write(pid(connect.unary(req)), new byte[0], true);
                    connect.answer(res, Map.of());
                }
                case "SendSignal" -> {
                    JsonNode m = connect.unary(req);
                    if (!processes.signal(pid(m), signal(m.get("signal")), false)) {
                        throw new Connect.Failure(Connect.Code.NOT_FOUND, "process " + pid(m) + " has ended");
                    }
                    connect.answer(res, Map.of());
                }
                case "Update" -> {
                    JsonNode m = connect.unary(req);
                    JsonNode size = m.path("pty").path("size");
                    if (size.isObject()) {
                        processes.resize(pid(m), new Terminal(size.path("rows").asInt(), size.path("cols").asInt()));
                    }
                    connect.answer(res, Map.of());
                }
                case "List" -> {
                    connect.unary(req);
                    List<Map<String, Object>> running = new ArrayList<>();
                    for (ProcessInfo p : processes.list()) {
                        if (p.running()) {
                            running.add(JsonObject.of("pid", p.pid(), "config", config(p)));
                        }
                    }
                    connect.answer(res, Map.of("processes", running));
                }
                default -> throw new Connect.Failure(Connect.Code.UNIMPLEMENTED, "process.Process has no " + method);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Connect.Failure(Connect.Code.CANCELED, "interrupted");
        }
    }

    /**
     * A server stream: its errors, before its first message as after, are its end-of-stream envelope in a 200 answer
     * (E2B's SDKs read no error body from a stream answered with another status).
     */
    private void streaming(String method, Envd.Call call, SessionProcesses processes, HttpServletRequest req,
            HttpServletResponse res) throws IOException, InterruptedException {
        try {
            JsonNode m = connect.streamRequest(req);
            if (method.equals("Start")) {
                start(call, processes, m, timeoutMs(req), res);
            } else {
                BackgroundProcess p = processes.get(pid(m));
                follow(p, p.info().outputBytes(), res);
            }
        } catch (RequestException | Connect.Failure e) {
            Connect.Failure f = e instanceof RequestException r ? Connect.of(r) : (Connect.Failure) e;
            if (!res.isCommitted()) {
                res.reset();
                connect.new Stream(res).end(f);
            }
        } catch (IOException e) {
            if (!res.isCommitted()) {
                throw e;
            } // the client went (E2B's disconnect): the process runs on
        }
    }

    private void start(Envd.Call call, SessionProcesses processes, JsonNode m, Long timeoutMs, HttpServletResponse res)
            throws IOException, InterruptedException {
        JsonNode p = m.path("process");
        if (!p.path("cmd").isString() || p.path("cmd").asString().isEmpty()) {
            throw new Connect.Failure(Connect.Code.INVALID_ARGUMENT, "process.cmd is required");
        }
        List<String> argv = new ArrayList<>(List.of(p.get("cmd").asString()));
        p.path("args").forEach(a -> argv.add(a.asString()));
        Map<String, String> env = new LinkedHashMap<>(call.sandbox().envVars());
        p.path("envs").properties().forEach(e -> env.put(e.getKey(), e.getValue().asString()));
        if (call.user().equals("user")) {
            env.putIfAbsent("HOME", call.sandbox().home()); // E2B's user lives in its home; root's is /root
        }
        String cwd = call.path(p.path("cwd").asString(""));
        JsonNode size = m.path("pty").path("size");
        Terminal pty = size.isObject() ? new Terminal(size.path("rows").asInt(24), size.path("cols").asInt(80)) : null;
        boolean stdin = pty != null || m.path("stdin").asBoolean(true);
        ProcessInfo info = processes.start(new CommandRequest(null, argv, env, cwd, timeoutMs, null,
                call.user().equals("root") ? CommandRequest.User.ROOT : CommandRequest.User.USER, true,
                stdin ? Boolean.TRUE : null, pty));
        follow(processes.get(info.pid()), 0, res);
    }

    /** Streams {@code p}'s events from {@code from} of its output to its end, or until the client goes. */
    private void follow(BackgroundProcess p, long from, HttpServletResponse res)
            throws IOException, InterruptedException {
        Connect.Stream stream = connect.new Stream(res);
        boolean pty = p.info().pty() != null;
        stream.send(Map.of("event", Map.of("start", Map.of("pid", p.pid()))));
        long next = from;
        while (true) {
            BackgroundProcess.Output out = p.read(next, CHUNK, KEEPALIVE_MS);
            for (BackgroundProcess.Chunk c : out.chunks()) {
                String stream1 = pty ? "pty" : c.stderr() ? "stderr" : "stdout";
                stream.send(Map.of("event", Map.of("data", Map.of(stream1, Base64.getEncoder().encodeToString(
                        c.bytes())))));
            }
            next = out.next();
            if (out.ended()) {
                break;
            }
            if (out.chunks().isEmpty()) {
                stream.send(Map.of("event", Map.of("keepalive", Map.of())));
            }
        }
        ProcessInfo info = p.info();
        Map<String, Object> end = new LinkedHashMap<>();
        boolean signalled = info.signal() != null;
        end.put("exitCode", signalled ? -1 : info.exitCode() == null ? -1 : info.exitCode());
        end.put("exited", !signalled && info.exitCode() != null);
        end.put("status", signalled ? "signal: " + info.signal() : "exit status " + info.exitCode());
        if (signalled || (info.exitCode() != null && info.exitCode() != 0)) {
            end.put("error", end.get("status"));
        }
        stream.send(Map.of("event", Map.of("end", end)));
        stream.end(info.timedOut() ? new Connect.Failure(Connect.Code.DEADLINE_EXCEEDED, "the command passed its"
                + " timeout and was killed") : null);
    }

    private static Map<String, Object> config(ProcessInfo p) {
        List<String> argv = p.argv();
        return JsonObject.of("cmd", argv.getFirst(), "args", argv.subList(1, argv.size()), "envs", Map.of(), "cwd", p.cwd());
    }

    private static long pid(JsonNode m) {
        JsonNode pid = m.path("process").path("pid");
        if (!pid.canConvertToLong()) {
            throw new Connect.Failure(Connect.Code.INVALID_ARGUMENT, "process.pid is required (a process by its tag is"
                    + " not supported here)");
        }
        return pid.asLong();
    }

    private static Object signal(JsonNode s) {
        if (s == null || s.isNull()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "signal is required");
        }
        if (s.canConvertToInt()) {
            return s.asInt();
        }
        return switch (s.asString()) {
            case "SIGNAL_SIGKILL" -> 9;
            case "SIGNAL_SIGTERM" -> 15;
            default -> s.asString().replaceFirst("^SIGNAL_", "");
        };
    }

    private static byte[] bytes(String base64) {
        try {
            return Base64.getDecoder().decode(base64);
        } catch (IllegalArgumentException e) {
            throw new Connect.Failure(Connect.Code.INVALID_ARGUMENT, "input is not base64");
        }
    }

    /** {@code Connect-Timeout-Ms}: the command's time limit (none when absent or 0). */
    private static Long timeoutMs(HttpServletRequest req) {
        String t = req.getHeader("Connect-Timeout-Ms");
        if (t == null || t.isBlank()) {
            return null;
        }
        try {
            long ms = Long.parseLong(t.strip());
            return ms <= 0 ? null : Math.min(ms, 86_400_000L);
        } catch (NumberFormatException e) {
            throw new Connect.Failure(Connect.Code.INVALID_ARGUMENT, "Connect-Timeout-Ms is not a number");
        }
    }
}
