package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Limits;
import dev.crucible.server.http.JsonObject;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionProcesses;
import dev.crucible.session.interpreter.Interpreter;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.CellStatus;
import java.io.IOException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * E2B's code contexts beyond a sandbox's first: each is an interpreter of its own (Crucible's session agent for its
 * language, Python or JavaScript) started in the sandbox as a background process of the user's, beside the session's
 * own interpreter, and driven with the same framed protocol ({@link ProcessBox}). So it has its own variables and
 * shares the sandbox's files, limits and network. A context whose process has ended (its sandbox restarted) starts
 * afresh at its next cell, its variables gone. Thread-safe; one cell at a time per context.
 */
final class Contexts {
    private static final long READY_MS = 30_000;
    private static final long GRACE_MS = 2_000;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** One context: its id, language and directory, and the interpreter now running it. */
    static final class Context {
        final String id;
        final String sandbox;
        final String language;
        final String cwd;
        private Interpreter interpreter;

        Context(String id, String sandbox, String language, String cwd) {
            this.id = id;
            this.sandbox = sandbox;
            this.language = language;
            this.cwd = cwd;
        }

        Map<String, Object> json() {
            return JsonObject.of("id", id, "language", language, "cwd", cwd);
        }
    }

    private final SessionManager sessions;
    private final RuntimeRegistry runtimes;
    private final JsonMapper json;
    private final Map<String, Context> byId = new ConcurrentHashMap<>();

    Contexts(SessionManager sessions, RuntimeRegistry runtimes, JsonMapper json) {
        this.sessions = sessions;
        this.runtimes = runtimes;
        this.json = json;
    }

    /**
     * A new context in sandbox {@code s}, its interpreter started.
     *
     * @throws RequestException {@code invalid_request} for a language without a session agent here
     */
    Context create(E2bSandboxes.Sandbox s, String language, String cwd) throws InterruptedException {
        LanguageRuntime runtime = runtime(language);
        Context c = new Context(HexFormat.of().formatHex(bytes()),
                s.id(), runtime.language(), cwd == null || cwd.isEmpty() ? s.home() : cwd);
        synchronized (c) {
            c.interpreter = start(s, c);
        }
        byId.put(c.id, c);
        return c;
    }

    private static byte[] bytes() {
        byte[] b = new byte[12];
        RANDOM.nextBytes(b);
        return b;
    }

    /** The context {@code id} of sandbox {@code s}; empty for another sandbox's or none. */
    Optional<Context> get(E2bSandboxes.Sandbox s, String id) {
        Context c = id == null ? null : byId.get(id);
        return c != null && c.sandbox.equals(s.id()) ? Optional.of(c) : Optional.empty();
    }

    /** The first context of {@code language} in {@code s}, made when it has none (a cell given a language alone). */
    Context forLanguage(E2bSandboxes.Sandbox s, String language) throws InterruptedException {
        String name = runtime(language).language();
        synchronized (this) {
            for (Context c : list(s)) {
                if (c.language.equals(name)) {
                    return c;
                }
            }
            return create(s, name, null);
        }
    }

    List<Context> list(E2bSandboxes.Sandbox s) {
        return byId.values().stream().filter(c -> c.sandbox.equals(s.id())).toList();
    }

    void remove(Context c) {
        byId.remove(c.id);
        synchronized (c) {
            if (c.interpreter != null) {
                c.interpreter.close();
            }
        }
    }

    /** Forgets every context of a sandbox that has gone. */
    void forget(String sandboxId) {
        byId.values().removeIf(c -> c.sandbox.equals(sandboxId));
    }

    /** A fresh interpreter for {@code c}: its variables gone. */
    void restart(E2bSandboxes.Sandbox s, Context c) throws InterruptedException {
        synchronized (c) {
            if (c.interpreter != null) {
                c.interpreter.close();
            }
            c.interpreter = start(s, c);
        }
    }

    /** Runs one cell in {@code c} (its interpreter started again first when it has ended). */
    CellResult execute(E2bSandboxes.Sandbox s, Context c, String code, long timeoutMs) throws InterruptedException {
        long start = System.nanoTime();
        synchronized (c) {
            boolean restarted = false;
            if (c.interpreter == null || !c.interpreter.alive()) {
                c.interpreter = start(s, c);
                restarted = true;
            }
            ObjectNode request = json.createObjectNode().put("code", code).put("mode", "auto")
                    .put("output_bytes", s.limits().outputBytes()).put("timeout_ms", timeoutMs);
            long wall = (System.nanoTime() - start) / 1_000_000;
            return switch (c.interpreter.call(request, timeoutMs, GRACE_MS)) {
                case Interpreter.Outcome.Answered a -> CellResult.fromAnswer(a.answer(), a.interruptedByTimeout(),
                        timeoutMs, (System.nanoTime() - start) / 1_000_000, restarted, false, null);
                case Interpreter.Outcome.Died d -> failed("InterpreterDied", "the context's interpreter exited"
                        + (d.exitCode() == null ? "" : " with code " + d.exitCode()) + "; its next cell starts a fresh"
                        + " one", wall);
                case Interpreter.Outcome.Stuck st -> {
                    c.interpreter.close();
                    yield failed("TimeoutError", "the cell did not stop within " + GRACE_MS + " ms of being"
                            + " interrupted at " + timeoutMs + " ms; the context starts afresh at its next cell", wall);
                }
                case Interpreter.Outcome.Violated v -> {
                    c.interpreter.close();
                    yield failed("ProtocolViolation", "the context's answer channel carried " + v.why(), wall);
                }
            };
        }
    }

    private static CellResult failed(String name, String message, long wall) {
        return new CellResult(CellStatus.RUNTIME_ERROR, "", "", false, false, null, null,
                new CellResult.CellError(name, message, ""), 0, wall, false, false, null);
    }

    private Interpreter start(E2bSandboxes.Sandbox s, Context c) throws InterruptedException {
        LanguageRuntime runtime = runtime(c.language);
        Limits limits = new Limits(Limits.MAXIMUM.timeoutMs(), Limits.MAXIMUM.cpuMs(), s.limits().memoryMb(),
                64 * 1024, s.limits().pids());
        Map<String, String> env = new LinkedHashMap<>(runtime.env());
        env.putAll(s.envVars());
        env.putIfAbsent("HOME", s.home());
        SessionProcesses processes = sessions.processes(s.owner(), s.id());
        ProcessInfo started = processes.startQuiet(new CommandRequest(null, runtime.sessionArgv(limits), env, c.cwd,
                null, null, CommandRequest.User.USER, true, true, null));
        ProcessBox box = new ProcessBox(processes, processes.get(started.pid()));
        try {
            return Interpreter.start(box, json, READY_MS, Path.of("/nonexistent"));
        } catch (IOException e) {
            box.close();
            throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "the " + c.language + " context could not"
                    + " start: " + e.getMessage());
        }
    }

    private LanguageRuntime runtime(String language) {
        String name = language == null || language.isEmpty() ? "python" : language.equals("js") ? "javascript"
                : language;
        LanguageRuntime r = runtimes.find(name).orElseThrow(() -> new RequestException(ErrorCode.INVALID_REQUEST,
                "no language " + language + " here for a code context"));
        if (!r.interactive()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a " + r.language() + " context is not offered: its"
                    + " runtime has no session agent");
        }
        return r;
    }
}
