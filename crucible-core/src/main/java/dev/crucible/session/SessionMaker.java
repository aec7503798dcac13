package dev.crucible.session;

import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeImage;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.budget.SessionNumbers;
import dev.crucible.session.process.Command;
import dev.crucible.session.process.CommandException;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.store.SessionIds;
import dev.crucible.session.store.SessionLease;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.DataDirFull;
import dev.crucible.util.MadeAhead;
import java.io.IOException;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Makes new sessions: made when asked (a directory, a workspace image, a root of its own, an interpreter started:
 * about 115 ms here), or taken from the spares, sessions of the default limits made ahead, each of the language, image
 * and tier the operator keeps ({@link SessionConfig#spares}), whose record then gets its owner, times and modes. A spare is made for no one: its
 * owner is {@link #SPARE}, which no token hashes to; nothing of a request reaches it before it is taken, and it is
 * taken once. A spare is never listed, reaped or kept across a restart (the next start removes it). Spares are made
 * only while the caps leave room for another session besides them, and one is let go when a session asked for
 * needs what it holds.
 */
final class SessionMaker implements AutoCloseable {
    /** The owner of a spare: not a sha256 in hex, so no token's. */
    static final String SPARE = "spare:made-ahead";
    /**
     * The command a spare runs once while it is made ahead: the shells commands start with, {@code /bin/sh} (the
     * API's) then {@code /bin/bash -l} (E2B's SDKs run every command so), doing nothing.
     */
    static final Command WARM_UP = new Command(List.of("/bin/sh", "-c", "exec /bin/bash -l -c :"), Map.of(),
            "/workspace", new byte[0], null);
    private static final long WARM_UP_MS = 5_000;
    private static final System.Logger LOG = System.getLogger("crucible.session");

    private final SessionConfig config;
    private final RuntimeRegistry runtimes;
    private final SessionNetwork network;
    private final SessionNumbers numbers;
    private final SessionStore store;
    private final Sandbox sandbox;
    private final SessionRunner runner;
    private final SessionIds ids;
    private final String replica;
    private final InstantSource clock;
    private final Map<String, Session> sessions;
    private final MadeAhead<Session> spares;
    private final Consumer<Session> discard;

    @SuppressWarnings("checkstyle:ParameterNumber") // the parts of the manager a create touches, handed over once by SessionManager
    SessionMaker(SessionConfig config, RuntimeRegistry runtimes, SessionNetwork network, SessionNumbers numbers,
            SessionStore store, Sandbox sandbox, SessionRunner runner, SessionIds ids, String replica,
            InstantSource clock, Map<String, Session> sessions, Consumer<Session> discard) {
        this.config = config;
        this.runtimes = runtimes;
        this.network = network;
        this.numbers = numbers;
        this.store = store;
        this.sandbox = sandbox;
        this.runner = runner;
        this.ids = ids;
        this.replica = replica;
        this.clock = clock;
        this.sessions = sessions;
        this.discard = discard;
        Map<SessionConfig.Spare, MadeAhead.Maker<Session>> makers = new HashMap<>(); // one per kind
        this.spares = new MadeAhead<>("sessions", config.spares().stream().map(kind -> makers.computeIfAbsent(kind,
                k -> () -> spare(k))).toList(), discard);
    }

    /** Starts making the spares, in the background. */
    void fill() {
        spares.fill();
    }

    /** How many spares are ready now. */
    int ready() {
        return spares.ready();
    }

    /**
     * A new session of {@code owner}, listed; with {@code start}, its interpreter started (a spare's when one fits).
     * Without, none yet (a fork's or a snapshot's, filled next).
     */
    Session create(String owner, SessionManager.CreateRequest request, boolean start) throws InterruptedException {
        NewSession checked = NewSession.check(request, config, runtimes, sandbox.host());
        EgressPolicy granted = network.grant(request.network(), checked.runtime());
        if (granted != null && checked.runtime().tier() != Isolation.NAMESPACES) {
            throw new RequestException(ErrorCode.ISOLATION_UNAVAILABLE, "egress behind " + checked.runtime().tier()
                    .wire() + " is not available yet; ask for no network, or for isolation \"namespaces\"");
        }
        if (start && granted == null && numbers.ownerHasRoom(owner)) {
            spares.discardIf(s -> s.interpreter == null || !s.interpreter.alive()); // died while it waited
            Session spare = spares.take(s -> s.stored.language().equals(checked.runtime().language())
                    && checked.runtime().tier().wire().equals(s.stored.isolation())
                    && sameImage(s.stored.image(), checked.runtime().image())
                    && sameSandbox(s.stored.limits(), checked.limits()));
            if (spare != null) {
                return adopt(spare, owner, checked);
            }
        }
        int number;
        try {
            number = numbers.take(owner, checked.limits().memoryMb());
        } catch (RequestException e) { // what a spare holds is wanted now: it is let go, once
            if (!numbers.ownerHasRoom(owner) || !spares.discardOne()) {
                throw e;
            }
            number = numbers.take(owner, checked.limits().memoryMb());
        }
        return make(owner, checked, granted, number, start, true);
    }

    /** The same image (by its digest, however named), or both none. */
    private static boolean sameImage(RuntimeImage a, RuntimeImage b) {
        return a == null || b == null ? a == b : a.digest() != null && a.digest().equals(b.digest());
    }

    private static boolean sameSandbox(SessionLimits a, SessionLimits b) { // what the sandbox was started with
        return a.memoryMb() == b.memoryMb() && a.pids() == b.pids() && a.cpus() == b.cpus();
    }

    /** A spare of {@code kind}, or null when the caps leave no room for one besides a session asked for. */
    private Session spare(SessionConfig.Spare kind) throws IOException, InterruptedException {
        NewSession checked = NewSession.check(new SessionManager.CreateRequest(kind.language(), null, null, null,
                kind.image(), null, null, null, kind.isolation()), config, runtimes, sandbox.host());
        if (network.grant(null, checked.runtime()) != null) {
            return null; // its runtime grants egress unasked: no create would fit a spare without network
        }
        int number = numbers.takeAhead(SPARE, checked.limits().memoryMb());
        if (number < 0) {
            return null;
        }
        Session spare = make(SPARE, checked, null, number, true, false);
        warmUp(spare);
        return spare;
    }

    /**
     * What a session's first command needs, done while its spare is made ahead (issue 50): the supervisor's first
     * start, and the sandbox's first look-ups and loads of the shells and their libraries, which a sandbox of its own
     * root otherwise pays on its first command. {@link #WARM_UP} runs as the session's user, in the foreground (it is
     * never listed), its output dropped; however it ends (no bash in an image's root: 127) the spare is as it was,
     * and one whose sandbox ended meanwhile is found dead when taken.
     */
    private static void warmUp(Session spare) throws InterruptedException {
        Supervisor supervisor = spare.supervisor;
        if (supervisor == null) {
            return; // no commands in this sandbox (behind gVisor, or no supervisor built)
        }
        try {
            supervisor.run(WARM_UP, WARM_UP_MS, 1024, null);
        } catch (CommandException e) {
            LOG.log(System.Logger.Level.DEBUG, "spare " + spare.stored.id() + ": its warm-up command: " + e.getMessage());
        }
    }

    /** The spare becomes {@code owner}'s session: its record written anew, then listed. */
    private Session adopt(Session spare, String owner, NewSession checked) {
        long now = clock.millis();
        SessionStore.Stored was = spare.stored;
        SessionStore.Stored stored = new SessionStore.Stored(was.id(), owner, was.language(), checked.limits(),
                checked.idleTimeoutS(), now, now + config.maxLifetime().toMillis(), checked.restore(), was.number(),
                was.image(), null, checked.onIdle(), was.isolation());
        try {
            numbers.adopt(was.number(), owner, checked.limits().memoryMb());
            store.write(stored);
        } catch (IOException | RuntimeException e) {
            discard.accept(spare);
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw DataDirFull.orElse((IOException) e, config.dataDir(), "the new session", new RequestException(
                    ErrorCode.INTERPRETER_UNAVAILABLE, "cannot record the new session: " + e.getMessage()));
        }
        spare.stored = stored;
        spare.touch();
        sessions.put(stored.id(), spare);
        return spare;
    }

    /** Makes session {@code number} of {@code owner}: its directory, workspace, root and (with {@code start}) interpreter. */
    private Session make(String owner, NewSession checked, EgressPolicy granted, int number, boolean start,
            boolean listed) throws InterruptedException {
        LanguageRuntime runtime = checked.runtime();
        long now = clock.millis();
        String id = ids.fresh(replica);
        SessionStore.Stored stored = new SessionStore.Stored(id, owner, runtime.language(), checked.limits(),
                checked.idleTimeoutS(), now, now + config.maxLifetime().toMillis(), checked.restore(), number,
                runtime.image(), granted == null ? null : granted.entries(), checked.onIdle(), runtime.tier().wire());
        Session session = new Session(stored, store.workspace(stored, sandbox.sessionUid(number)), Session.State.LIVE,
                clock);
        try {
            boolean rooted = runtime.image() == null && store.roomForRoots() && sandbox.rootUnavailable() == null
                    && runtime.tier() == Isolation.NAMESPACES; // gVisor's root is its kernel's
            store.create(stored, config.workspaceQuota(), rooted);
            checked.seed(start, store.dir(id).resolve("workspace"), sandbox.sessionUid(number));
            if (rooted) {
                sandbox.prepareRoot(store.rootOf(stored), number, runtime.binds());
            }
            if (replica != null) {
                session.lease = SessionLease.tryTake(store.dir(id), replica).orElseThrow(
                        () -> new IOException("the new session's directory is held by another replica"));
            }
            session.lock.lock();
            try {
                if (listed) {
                    sessions.put(stored.id(), session);
                }
                session.interpreter = start ? runner.start(session) : null;
            } finally {
                session.lock.unlock();
            }
            return session;
        } catch (IOException | RuntimeException e) {
            sessions.remove(stored.id());
            store.remove(stored, session.workspace);
            session.releaseLease();
            numbers.release(number);
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw DataDirFull.orElse((IOException) e, config.dataDir(), "the new session", new RequestException(
                    ErrorCode.INTERPRETER_UNAVAILABLE, "cannot start the " + runtime.language() + " interpreter: "
                            + e.getMessage()));
        }
    }

    /** Stops making spares and removes those made. */
    @Override
    public void close() {
        spares.close();
    }
}
