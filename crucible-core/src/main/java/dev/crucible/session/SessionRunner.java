package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.health.Replacements;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.session.interpreter.Interpreter;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.spec.CellMode;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.CellStatus;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.store.SavedMemory;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.DataDirFull;
import dev.crucible.util.WireNames;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Runs the cells of a session in its interpreter: starts the interpreter when there is none (resuming, replaying or
 * restarting as the session's {@link Session.State} says), maps each {@link Interpreter.Outcome} to a
 * {@link CellResult} and moves the state on. The caller holds the session's lock, but for {@link #execute}, which
 * takes it.
 */
final class SessionRunner {
    private static final System.Logger LOG = System.getLogger("crucible.session");
    private static final long READY_MS = SessionConfig.RESTART_BOUND_MS;
    private static final String RESTORING = "memory.restoring"; // a saved sandbox being restored (see fromMemory)

    private final Sandbox sandbox;
    private final RuntimeRegistry runtimes;
    private final SessionStore store;
    private final JsonMapper json;
    private final SessionNetwork network;
    private final SessionConfig config;
    private final long graceMs;

    SessionRunner(Sandbox sandbox, RuntimeRegistry runtimes, SessionStore store, SessionNetwork network, JsonMapper json,
            SessionConfig config) {
        this.sandbox = sandbox;
        this.runtimes = runtimes;
        this.store = store;
        this.network = network;
        this.json = json;
        this.config = config;
        this.graceMs = config.grace().toMillis();
    }

    /**
     * Runs one cell of {@code session} once it has the session's lock (waiting at most the cell's bound for a cell
     * that is running); see {@link SessionManager#execute}.
     *
     * @throws RequestException as {@link SessionManager#execute}
     */
    CellResult execute(Session session, String code, String mode, Long timeoutMs) throws InterruptedException {
        if (code == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
        }
        CellMode m = mode == null ? CellMode.AUTO : WireNames.find(CellMode.values(), CellMode::wireName, mode);
        if (m == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "mode must be one of "
                    + Arrays.stream(CellMode.values()).map(CellMode::wireName).toList());
        }
        long timeout = timeoutMs == null ? session.stored.limits().timeoutMs() : timeoutMs;
        if (timeout < 1 || timeout > SessionLimits.MAXIMUM.timeoutMs()) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, "timeout_ms must be between 1 and "
                    + SessionLimits.MAXIMUM.timeoutMs());
        }
        if (code.length() > config.maxCellBytes() || code.getBytes(StandardCharsets.UTF_8).length > config.maxCellBytes()) {
            throw new RequestException(ErrorCode.CELL_TOO_LARGE, "the cell is larger than " + config.maxCellBytes() + " bytes");
        }
        if (!session.lock.tryLock(timeout + config.grace().toMillis() + 5_000, TimeUnit.MILLISECONDS)) {
            throw new RequestException(ErrorCode.SESSION_BUSY, "another cell of this session is still running");
        }
        try {
            if (session.gone()) {
                throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no session " + session.stored.id());
            }
            session.touch();
            readyToWrite(session); // a workspace that grows: a step of room before the cell writes
            if (session.stored.restore().equals("replay")) {
                try {
                    store.reserveCell(session.stored, code, m.wireName());
                } catch (IOException e) {
                    if (DataDirFull.is(e)) {
                        throw DataDirFull.refusal(config.dataDir(), "the cell (not run: its replay log has no room)");
                    }
                    LOG.log(System.Logger.Level.WARNING, "cannot make room in the cell log of " + session.stored.id()
                            + ": " + e.getMessage());
                }
            }
            return run(session, code, m, timeout);
        } finally {
            session.touch();
            session.lock.unlock();
        }
    }

    /** Starts a fresh interpreter in a sandbox of the session's own uid, cgroups and workspace. */
    Interpreter start(Session session) throws IOException, InterruptedException {
        return start(session, null);
    }

    /** As {@link #start(Session)}; with {@code memory} not null, the sandbox a pause saved there, restored whole. */
    private Interpreter start(Session session, Path memory) throws IOException, InterruptedException {
        SessionStore.Stored stored = session.stored;
        LanguageRuntime runtime = session.runtime(runtimes);
        SessionLimits l = stored.limits();
        Limits limits = new Limits(Limits.MAXIMUM.timeoutMs(), Limits.MAXIMUM.cpuMs(), l.memoryMb(), 64 * 1024, l.pids());
        Path workspace = store.dir(stored.id()).resolve("workspace");
        SandboxRoot own = stored.image() == null ? store.rootOf(stored) : null; // a root of its own, if made with one
        SandboxSpec spec = new SandboxSpec(runtime.sessionArgv(limits), runtime.env(), Map.of(), null, false,
                runtime.binds(), own != null ? own : runtime.root(), null, limits, workspace)
                .withEgress(network.proxyFor(session, runtime)).withIsolation(runtime.tier());
        Path log = store.freshInterpreterLog(stored);
        Sandbox.Interactive box = memory == null ? sandbox.open(spec, stored.number(), l.cpus(), log)
                : sandbox.restore(spec, stored.number(), l.cpus(), log, SavedMemory.unlock(memory,
                        sandbox.sessionUid(stored.number())));
        Interpreter interpreter = memory == null ? Interpreter.start(box, json, READY_MS, log)
                : Interpreter.restored(box, json);
        session.attach(interpreter, box.control().map(c -> Supervisor.on(c, session.clock(), session::touch))
                .orElse(null), box);
        return interpreter;
    }

    /**
     * The host uid the files API acts as in the session's sandbox: its user's, or its root's ({@code root}: -1 when it
     * has no root of its own, or sandboxes run as the server's own uid).
     */
    long fileUid(Session session, boolean root) {
        SessionStore.Stored stored = session.stored;
        if (!root) {
            return sandbox.sessionUid(stored.number());
        }
        return stored.image() == null && store.rootOf(stored) != null ? sandbox.sessionRootUid(stored.number()) : -1;
    }

    /** Replaces the interpreter by a fresh one: variables and logged cells gone, files kept. */
    void restart(Session session) throws InterruptedException {
        session.stopInterpreter();
        session.interpreter = null;
        store.clearCells(session.stored);
        SavedMemory.delete(memory(session)); // a paused one's saved memory is not what a restart comes back to
        try {
            session.interpreter = start(session);
            session.transition(Session.State.LIVE);
        } catch (IOException e) {
            throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "cannot start the interpreter: " + e.getMessage());
        }
    }

    /**
     * How a call found its session's interpreter: started for it (after a crash, or resumed from a kept session and
     * replayed) or live; {@code failure} says why none could be started.
     */
    record Boot(boolean restarted, boolean resumed, Integer replayed, String failure, String restored) {
        Boot(boolean restarted, boolean resumed, Integer replayed, String failure) {
            this(restarted, resumed, replayed, failure, null);
        }
    }

    /** Starts the session's interpreter when there is none or it died (resuming, replaying); under the lock. */
    Boot boot(Session session) throws InterruptedException {
        boolean restarted = session.state() == Session.State.BROKEN;
        boolean resumed = false;
        Integer replayed = null;
        if (session.interpreter == null || !session.interpreter.alive()
                || (session.supervisor != null && session.supervisor.ended())) {
            if (session.interpreter != null) {
                if (!restarted) { // it ended between two calls (killed from outside): replaced now
                    replaced(session, Replacements.Reason.DIED, "it ended between two calls");
                }
                session.interpreter.close();
                restarted = true;
            }
            resumed = session.state() == Session.State.DORMANT || session.state() == Session.State.PAUSED;
            if (resumed && fromMemory(session)) {
                return new Boot(restarted, true, null, null, "memory");
            }
            try {
                session.interpreter = start(session);
            } catch (IOException e) {
                session.detach();
                return new Boot(restarted, resumed, null, "cannot start the interpreter: " + e.getMessage());
            }
            session.transition(Session.State.LIVE);
            if (resumed && session.stored.restore().equals("replay")) {
                replayed = replay(session);
            } else if (!resumed) {
                store.clearCells(session.stored); // a fresh interpreter after a crash: the logged cells' variables are gone
            }
        }
        return new Boot(restarted, resumed, replayed, null, !resumed ? null : replayed != null ? "replay" : "files");
    }

    Path memory(Session session) { // where a pause keeps its saved sandbox
        return memoryOf(store, session.stored);
    }

    /** Where a pause keeps the saved sandbox of {@code stored}: in the session's directory, beside its workspace. */
    static Path memoryOf(SessionStore store, SessionStore.Stored stored) {
        return store.dir(stored.id()).resolve("memory");
    }

    /**
     * Restores the sandbox a pause saved, if there is one: whether the session's interpreter is back with its memory.
     * What was saved is used once: moved aside first ({@code memory.restoring}: never restored again, by this server
     * or after a restart), and removed once the restored interpreter answered a cell (runsc reads it after the start
     * returns), or at once when the restore failed (the caller then starts a fresh one).
     */
    private boolean fromMemory(Session session) throws InterruptedException {
        Path memory = memoryOf(store, session.stored);
        if (!Files.isDirectory(memory, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        Path restoring = memory.resolveSibling(RESTORING);
        try {
            SavedMemory.delete(restoring);
            Files.move(memory, restoring, StandardCopyOption.ATOMIC_MOVE);
            session.interpreter = start(session, restoring);
            session.transition(Session.State.LIVE);
            return true;
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "session " + session.stored.id() + " did not come back from its"
                    + " saved memory (" + e.getMessage() + "); it starts afresh");
            session.detach();
            SavedMemory.delete(restoring);
            SavedMemory.delete(memory);
            return false;
        }
    }

    /** Removes what a restore read, once the restored interpreter has answered: nothing when there is none. */
    private void restored(Session session) {
        Path restoring = memoryOf(store, session.stored).resolveSibling(RESTORING);
        if (Files.exists(restoring, LinkOption.NOFOLLOW_LINKS)) {
            SavedMemory.delete(restoring);
        }
    }

    /**
     * Pauses the session (its lock held): behind gVisor its sandbox saved whole into {@link #memoryOf} when
     * {@code save}, else (or when the save fails) stopped; its files stay. What a resume brings back: {@code memory}, {@code replay} or {@code files}.
     */
    String pause(Session session, boolean save) throws InterruptedException {
        Path memory = memoryOf(store, session.stored);
        SavedMemory.delete(memory); // a pause's memory is used once; one left by a crash is not to be trusted
        SavedMemory.delete(memory.resolveSibling(RESTORING));
        String keeps = session.stored.restore().equals("replay") ? "replay" : "files";
        Interpreter live = session.interpreter;
        Sandbox.Interactive box = session.box;
        if (save && live != null && live.alive() && box != null && session.state() == Session.State.LIVE) {
            try {
                box.checkpoint(memory);
                SavedMemory.lock(memory);
                keeps = "memory";
            } catch (IOException e) { // not behind gVisor (then nothing was written), or the save failed
                SavedMemory.delete(memory);
                LOG.log(System.Logger.Level.DEBUG, "session " + session.stored.id() + " paused without its memory: "
                        + e.getMessage());
            }
        }
        session.stopInterpreter();
        session.detach();
        session.transition(Session.State.PAUSED);
        return keeps;
    }

    /**
     * Makes a step of free room in the session's workspace now where it grows (the looker would make it within a
     * fifth of a second; a cell, a command or an upload that writes at once should not meet {@code ENOSPC} before its
     * quota in between). Never throws: a workspace that cannot grow refuses its writes itself.
     */
    void readyToWrite(Session session) {
        store.readyToWrite(session.stored);
    }

    /** Runs one cell; never throws for what the cell or its interpreter does. */
    CellResult run(Session session, String code, CellMode mode, long timeout) throws InterruptedException {
        long start = System.nanoTime();
        Boot boot = boot(session);
        boolean restarted = boot.restarted();
        boolean resumed = boot.resumed();
        Integer replayed = boot.replayed();
        if (boot.failure() != null) {
            return failure(CellStatus.SANDBOX_ERROR, "InterpreterUnavailable", boot.failure(), start, restarted,
                    resumed);
        }
        ObjectNode request = json.createObjectNode().put("code", code).put("mode", mode.wireName())
                .put("output_bytes", session.stored.limits().outputBytes()).put("timeout_ms", timeout);
        return switch (session.interpreter.call(request, timeout, graceMs)) {
            case Interpreter.Outcome.Answered a -> {
                restored(session);
                CellResult r = CellResult.fromAnswer(a.answer(), a.interruptedByTimeout(), timeout, millisSince(start), restarted,
                        resumed, replayed);
                if (r.status() == CellStatus.OK) {
                    store.appendCell(session.stored, code, mode.wireName());
                }
                yield r;
            }
            case Interpreter.Outcome.Died d -> {
                broken(session);
                replaced(session, Replacements.Reason.DIED, "it ended during a cell" + (d.oomKilled() ? " (out of memory)"
                        : d.exitCode() == null ? "" : " with code " + d.exitCode()));
                String why = d.oomKilled() ? "the interpreter was killed for using more than its "
                        + session.stored.limits().memoryMb() + " MiB"
                        : "the interpreter exited" + (d.exitCode() == null ? "" : " with code " + d.exitCode());
                yield failure(d.oomKilled() ? CellStatus.MEMORY_LIMIT : CellStatus.RUNTIME_ERROR, "InterpreterDied",
                        why + "; the session restarts with a fresh interpreter on the next call", start, restarted,
                        resumed);
            }
            case Interpreter.Outcome.Violated v -> {
                broken(session);
                yield failure(CellStatus.RUNTIME_ERROR, "ProtocolViolation", "the interpreter's answer channel carried "
                        + v.why() + "; cells must not write to the agent's own descriptors. The session restarts with a"
                        + " fresh interpreter on the next call", start, restarted, resumed);
            }
            case Interpreter.Outcome.Stuck s -> {
                String message = "the cell did not stop within " + graceMs + " ms of being interrupted at " + timeout
                        + " ms; the session was restarted and its variables are lost";
                replaced(session, Replacements.Reason.UNANSWERED, "no answer within " + (timeout + graceMs)
                        + " ms of a cell and its interrupt");
                try {
                    restart(session);
                } catch (RequestException e) {
                    session.transition(Session.State.BROKEN);
                    message += " (the new interpreter did not start: " + e.getMessage().replaceFirst(
                            "^cannot start the interpreter: ", "") + ")";
                }
                yield failure(CellStatus.TIMEOUT, "TimeoutError", message, start, true, resumed);
            }
        };
    }

    /**
     * The session's sandbox ended under a command (its supervisor's socket closed): the interpreter goes with it, and
     * the next call starts a fresh one ({@code restarted}), as after a crash. Nothing when another call has started a
     * new sandbox meanwhile.
     */
    void sandboxLost(Session session, Supervisor lost, String why) {
        if (session.supervisor != lost || session.state() == Session.State.GONE) {
            return;
        }
        session.stopInterpreter();
        session.transition(Session.State.BROKEN);
        replaced(session, Replacements.Reason.DIED, "its sandbox ended under a command: " + why);
    }

    private void replaced(Session session, Replacements.Reason reason, String detail) {
        sandbox.replacements().replaced(Replacements.Part.INTERPRETER, reason, "session " + session.stored.id()
                + "'s interpreter", detail);
    }

    private static void broken(Session session) {
        session.interpreter.close();
        session.transition(Session.State.BROKEN);
    }

    /** Replays the logged cells in a fresh interpreter. Returns how many ran ok. */
    private int replay(Session session) throws InterruptedException {
        int ok = 0;
        for (SessionStore.Cell cell : store.cells(session.stored)) {
            ObjectNode request = json.createObjectNode().put("code", cell.code()).put("mode", cell.mode())
                    .put("output_bytes", 1024);
            var outcome = session.interpreter.call(request, session.stored.limits().timeoutMs(), graceMs);
            if (!(outcome instanceof Interpreter.Outcome.Answered a)) {
                break;
            }
            if (CellStatus.fromAgent(a.answer().path("status").asString("")) == CellStatus.OK) {
                ok++;
            }
        }
        return ok;
    }

    private static CellResult failure(CellStatus status, String name, String message, long start,
            boolean restarted, boolean resumed) {
        return new CellResult(status, "", "", false, false, null, null, new CellResult.CellError(name, message, ""), 0,
                millisSince(start), restarted, resumed, null);
    }

    private static long millisSince(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}
