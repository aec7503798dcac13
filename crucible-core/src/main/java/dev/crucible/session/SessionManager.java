package dev.crucible.session;

import dev.crucible.egress.Egress;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.budget.SessionNumbers;
import dev.crucible.session.interpreter.Interpreter;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.snapshot.SnapshotInfo;
import dev.crucible.session.snapshot.SnapshotStore;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.store.SessionIds;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.util.FairTurns;
import java.io.IOException;
import java.time.InstantSource;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.databind.json.JsonMapper;

/**
 * Stateful sessions: a persistent interpreter in a long-lived sandbox per session, its files under
 * {@code <data dir>/sessions/<id>/workspace} (bound at {@code /workspace}), its successful cells logged for replay.
 * Sessions outlive the server: after a restart, even after {@code kill -9}, they are found again and the next cell
 * starts a fresh interpreter ({@code resumed}), replaying the logged cells when the session asked for
 * {@code restore: "replay"}. Idle and over-age sessions are removed in the background.
 *
 * <p>Owners are opaque strings (the server passes a hash of the bearer token): a session is visible only to its
 * owner; to anyone else it does not exist. Thread-safe; the cells of one session run one at a time.
 */
public final class SessionManager implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.session");

    private final Sandbox sandbox;
    private final RuntimeRegistry runtimes;
    private final SessionConfig config;
    private final InstantSource clock;
    private final SessionIds ids = new SessionIds();
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final SessionStore store;
    private final SessionNumbers numbers;
    private final SessionNetwork network;
    private final SessionRunner runner;
    private final SessionCommands commands;
    private final KeptSessions kept;
    private final SnapshotStore snapshots;
    private final SessionMaker maker;
    private SessionReaper reaper;
    private volatile boolean closed;
    private static final int CREATES_QUEUED = 1000;
    private volatile FairTurns creates = new FairTurns("session creates",
            FairTurns.Limits.of(Runtime.getRuntime().availableProcessors(), CREATES_QUEUED));
    private volatile long createWaitMs = 30_000;
    /** This replica's name when replicas share the data directory (ids carry it), or null on a single node. */
    private final String replica;

    private SessionManager(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config, InstantSource clock,
            String replica) throws IOException {
        SessionIds.checkReplica(replica);
        this.replica = replica;
        this.sandbox = sandbox;
        this.runtimes = runtimes;
        this.config = config;
        this.clock = clock;
        JsonMapper json = JsonMapper.builder().build();
        this.store = new SessionStore(config.dataDir(), sandbox.sessionUid(0) >= 0, json);
        this.numbers = SessionNumbers.of(config, store, sandbox);
        this.network = new SessionNetwork(runtimes, store, config.dataDir());
        this.runner = new SessionRunner(sandbox, runtimes, store, network, json, config);
        this.commands = new SessionCommands(runner, config);
        this.kept = new KeptSessions(replica, store, numbers, sandbox, clock, sessions);
        this.snapshots = new SnapshotStore(config.dataDir(), json);
        numbers.countSnapshots(snapshots::totalBytes);
        this.maker = new SessionMaker(config, runtimes, network, numbers, store, sandbox, runner, ids, replica, clock,
                sessions, this::remove);
    }

    /** The sandbox every session runs in (an image build of E2B's template API runs its steps there too). */
    public Sandbox sandbox() {
        return sandbox;
    }

    /** Loads the sessions kept under the data directory (those past their lifetime removed); starts the reaper. */
    public static SessionManager start(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config)
            throws IOException {
        return start(sandbox, runtimes, config, InstantSource.system());
    }

    /** As {@link #start(Sandbox, RuntimeRegistry, SessionConfig)} on {@code clock} (a test's, with {@link #reap()}). */
    public static SessionManager start(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config,
            InstantSource clock) throws IOException {
        return start(sandbox, runtimes, config, clock, null);
    }

    /**
     * As {@link #start(Sandbox, RuntimeRegistry, SessionConfig, InstantSource)}, as replica {@code replica} of several
     * that may share the data directory (null: a single node). A replica's session ids start with its name; it loads
     * at start only the sessions it held (no other live replica holds them), and takes over another's only when asked
     * for one whose holder is gone ({@link #adopt}).
     */
    public static SessionManager start(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config,
            InstantSource clock, String replica) throws IOException {
        SessionManager manager = new SessionManager(sandbox, runtimes, config, clock, replica);
        manager.kept.loadAll();
        if (!manager.sessions.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "kept " + manager.sessions.size() + " sessions from " + manager.store.root());
        }
        manager.reaper = new SessionReaper(() -> List.copyOf(manager.sessions.values()), manager::remove,
                s -> manager.runner.pause(s, true), config.reapEvery());
        manager.maker.fill();
        return manager;
    }

    /** This replica's name, or null on a single node. */
    public String replica() {
        return replica;
    }

    /** Whether {@code id} has a session id's form (it may name a session of any replica). */
    public static boolean wellFormed(String id) {
        return SessionIds.wellFormed(id);
    }

    /** The replica a session id was made by, or null for an id without one. */
    public static String replicaOf(String id) {
        return SessionIds.replicaOf(id);
    }

    /** Whether session {@code id} is loaded here. */
    public boolean holds(String id) {
        Session s = id == null ? null : sessions.get(id);
        return s != null && !s.gone();
    }

    /** Where requests for {@code id} go: here, else its owner file's replica, else its id's; null when unknown. */
    public String ownerOf(String id) {
        if (holds(id)) {
            return replica;
        }
        if (replica != null && wellFormed(id)) {
            return kept.lastHolder(id);
        }
        return replicaOf(id);
    }

    /**
     * Takes over session {@code id} from a replica that is gone (shared data directory, no live holder), loaded DORMANT
     * so its next cell resumes it; whether this replica holds it now.
     */
    public synchronized boolean adopt(String id) {
        if (holds(id)) {
            return true;
        }
        if (replica == null || closed || !wellFormed(id)) {
            return false;
        }
        return kept.adopt(id);
    }

    /**
     * A session to create: every field optional; {@code image} is an image of the store to run the session in;
     * {@code onIdle} {@code "delete"} (the default) or {@code "pause"}: what its idle timeout does to it;
     * {@code snapshot} the name of a snapshot of the owner's to make it from; {@code isolation} the tier it runs behind
     * ({@code namespaces}, {@code gvisor}; null: its runtime's), never weaker than its runtime's.
     */
    public record CreateRequest(String language, SessionLimits limits, Long idleTimeoutS, String restore, String image,
            NetworkRequest network, String onIdle, String snapshot, String isolation) {
        public CreateRequest(String language, SessionLimits limits, Long idleTimeoutS, String restore) {
            this(language, limits, idleTimeoutS, restore, null, null, null, null, null);
        }

        public CreateRequest(String language, SessionLimits limits, Long idleTimeoutS, String restore, String image) {
            this(language, limits, idleTimeoutS, restore, image, null, null, null, null); // without network
        }

        public CreateRequest(String language, SessionLimits limits, Long idleTimeoutS, String restore, String image,
                NetworkRequest network, String onIdle, String snapshot) {
            this(language, limits, idleTimeoutS, restore, image, network, onIdle, snapshot, null); // the runtime's tier
        }
    }

    /** Grants network requests within {@code operatorEgress} from now on (kept sessions keep what of it they had). */
    public void useEgress(Egress operatorEgress) {
        network.use(operatorEgress);
    }

    /**
     * Narrows a session's egress for good (stored; open connections closed): {@code {"allow": []}} drops it.
     *
     * @throws RequestException {@code data_dir_full} (in force, but not stored), {@code egress_not_allowed} for an entry
     *     not in its list (egress only narrows), {@code invalid_request} for a bad entry
     */
    public SessionInfo narrowNetwork(String owner, String id, NetworkRequest asked) {
        return network.narrow(find(owner, id), asked);
    }

    /**
     * Creates a session and starts its interpreter, or brings it up from {@code snapshot}. @throws RequestException for a
     * bad request, {@code too_many_sessions}, {@code data_dir_full}, {@code snapshot_not_found}
     */
    public SessionInfo create(String owner, CreateRequest request) throws InterruptedException {
        try (FairTurns.Turn turn = creates.enter(owner, createWaitMs)) {
            if (request.snapshot() != null) { // the snapshot's copy, brought up at once
                return pauses(owner, (Session) null).fromSnapshot(snapshots.require(owner, request.snapshot()),
                        request);
            }
            return maker.create(owner, request, true).info();
        }
    }

    /**
     * Makes sessions within {@code turns} from now on (at most so many at once, the rest waiting their turn, shared
     * fairly between owners), each waiting at most {@code waitMs}; until then, one per core and
     * {@value #CREATES_QUEUED} waiting.
     */
    public void admitCreates(FairTurns turns, long waitMs) {
        this.creates = turns;
        this.createWaitMs = waitMs;
    }

    /** The turns creates take: their limits, waits and refusals. */
    public FairTurns creates() {
        return creates;
    }

    /** The session {@code id} of {@code owner}; anyone else's, or none, is not found. */
    private Session find(String owner, String id) {
        Session s = id == null ? null : sessions.get(id);
        if (s == null || s.gone() || !s.stored.owner().equals(owner)) {
            throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no session " + SessionIds.shown(id));
        }
        return s;
    }

    /** One session as the API shows it, with the ports that listen in its sandbox now. */
    public SessionInfo get(String owner, String id) {
        return find(owner, id).info(true);
    }

    /** @throws RequestException {@code session_not_found} unless {@code owner} has session {@code id} */
    public void require(String owner, String id) {
        find(owner, id);
    }

    /** The owner's sessions, oldest first. */
    public List<SessionInfo> list(String owner) {
        return sessions.values().stream().filter(s -> s.stored.owner().equals(owner) && !s.gone())
                .sorted(Comparator.comparingLong(s -> s.stored.createdAtMs())).map(Session::info).toList();
    }

    /** How many sessions exist (all owners). */
    public int size() { return sessions.size(); }

    /** How many spare sessions are made ahead and ready now. */
    public int sparesReady() { return maker.ready(); }

    /** The sessions' numbers and budgets: the memory budget, what sessions reserve of it and use (/metrics, /readyz). */
    public SessionNumbers numbers() { return numbers; }

    /**
     * Runs one cell.
     *
     * @param mode {@code auto} (default), {@code exec} or {@code single}
     * @param timeoutMs this cell's timeout, or null for the session's
     * @throws RequestException {@code session_not_found}, {@code cell_too_large}, {@code session_busy};
     *     {@code data_dir_full} for a session with {@code restore: "replay"} whose cell log has no room (the cell
     *     does not run: run, it would be missing from the replay)
     */
    public CellResult execute(String owner, String id, String code, String mode, Long timeoutMs)
            throws InterruptedException {
        return runner.execute(find(owner, id), code, mode, timeoutMs);
    }

    /** Runs one command in the session's sandbox to its end or time limit. @throws RequestException as SessionCommands */
    public CommandResult command(String owner, String id, CommandRequest request) throws InterruptedException {
        return command(owner, id, request, OutputListener.NONE);
    }

    /** As {@link #command(String, String, CommandRequest)}, its output passed to {@code listener} as it comes. */
    public CommandResult command(String owner, String id, CommandRequest request, OutputListener listener)
            throws InterruptedException {
        return commands.run(find(owner, id), request, listener);
    }

    /** The background processes of a session. @throws RequestException {@code session_not_found} */
    public SessionProcesses processes(String owner, String id) {
        return new SessionProcesses(find(owner, id), commands);
    }

    /** A session's ports: what listens in its sandbox, connections to it. @throws RequestException session_not_found */
    public SessionPorts ports(String owner, String id) {
        return new SessionPorts(find(owner, id));
    }

    /** Pausing and resuming a session (issue 30). @throws RequestException {@code session_not_found} */
    public SessionPauses pauses(String owner, String id) {
        return pauses(owner, find(owner, id));
    }

    private SessionPauses pauses(String owner, Session session) {
        return new SessionPauses(session, runner, request -> maker.create(owner, request, false), this::remove, sandbox,
                store, snapshots, numbers::admitSnapshot, runtimes.images());
    }

    /** The owner's snapshots, oldest first. */
    public List<SnapshotInfo> snapshots(String owner) {
        return snapshots.list(owner).stream().map(SnapshotStore.Record::info).toList();
    }

    /** Deletes the owner's snapshot {@code name}. @throws RequestException {@code snapshot_not_found} */
    public void deleteSnapshot(String owner, String name) throws IOException {
        snapshots.delete(owner, name);
    }

    /** Interrupts the running cell (SIGINT: KeyboardInterrupt in Python), the session kept; whether one ran. */
    public boolean interrupt(String owner, String id) {
        Interpreter live = find(owner, id).interpreter;
        return live != null && live.interrupt();
    }

    /** Replaces the interpreter by a fresh one (variables gone, files kept). */
    public SessionInfo restart(String owner, String id) throws InterruptedException {
        Session session = find(owner, id);
        session.stopInterpreter(); // ends a running cell too: its caller gets the interpreter's death
        session.lock.lock();
        try {
            runner.restart(session);
            session.touch();
            return session.info();
        } finally {
            session.lock.unlock();
        }
    }

    /** Deletes the session: its interpreter, its files, its log. */
    public void delete(String owner, String id) {
        remove(find(owner, id));
        maker.fill(); // its place may be a spare's again
    }

    private void remove(Session session) {
        session.transition(Session.State.GONE);
        session.stopInterpreter();
        session.lock.lock();
        try {
            session.stopAll();
            session.interpreter = null;
            sessions.remove(session.stored.id(), session);
            store.remove(session.stored, session.workspace);
            session.releaseLease();
            numbers.release(session.stored.number());
        } finally {
            session.lock.unlock();
        }
    }

    /**
     * Whether a session has a root of its own (docs/sessions.md): known from its record, its sandbox untouched; its
     * user's home is then the {@code /home/user} its root was made with.
     */
    public boolean ownRoot(String owner, String id) {
        return runner.fileUid(find(owner, id), true) >= 0;
    }

    /** The files of a session, with the caps and the quota of this manager. */
    public SessionFiles files(String owner, String id) {
        Session session = find(owner, id);
        session.touch();
        return commands.files(session);
    }

    /** Removes sessions idle past their timeout or past their lifetime now; a session running a cell waits. */
    void reap() {
        reaper.reap();
    }

    /** Stops the reaper and every interpreter; the sessions' files and logs stay for the next start. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        reaper.close();
        maker.close(); // the spares removed: no one's sessions
        for (Session session : sessions.values()) {
            session.stopAll();
            store.detach(session.stored); // the files stay in the image; the next start mounts it again
            session.releaseLease();
        }
        store.awaitProbe(); // nothing of ours is left mounted under the data directory
    }
}
