package dev.crucible.session;

import dev.crucible.ErrorCode;
import dev.crucible.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

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
    private static final HexFormat HEX = HexFormat.of();
    private static final long READY_MS = 20_000;
    private static final List<String> MODES = List.of("auto", "exec", "single");

    private final Sandbox sandbox;
    private final RuntimeRegistry runtimes;
    private final SessionConfig config;
    private final Path root;
    private final JsonMapper json = JsonMapper.builder().build();
    private final SecureRandom random = new SecureRandom();
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final BitSet numbers = new BitSet();
    /** Memory limit reserved by each session number; guarded by {@link #numbers}. */
    private final Map<Integer, Integer> reservedMb = new java.util.HashMap<>();
    private final WorkspaceDisk disk;
    private final long memoryBudgetMb;
    private final long diskBudgetBytes;
    private final ScheduledExecutorService reaper;
    private final InstantSource clock;
    private volatile boolean closed;

    /** What a session keeps on disk ({@code session.json}). */
    record Stored(
            String id, String owner, String language, SessionLimits limits, long idleTimeoutS, long createdAtMs,
            long endOfLifeMs, String restore, int number) {}

    /** One session: what is stored, and the live interpreter when there is one. Guarded by {@link #lock}. */
    private final class Session {
        final Stored stored;
        final Path dir;
        final Workspace workspace;
        final ReentrantLock lock = new ReentrantLock();
        Interpreter interpreter;
        boolean resumePending;
        boolean restartPending;
        volatile long lastUsedMs = clock.millis();
        volatile boolean gone;

        Session(Stored stored, boolean resumed) {
            this.stored = stored;
            this.dir = root.resolve(stored.id());
            this.workspace = new Workspace(dir.resolve("workspace"), sandbox.sessionUid(stored.number()));
            this.resumePending = resumed;
        }

        long expiresAtMs() {
            return Math.min(lastUsedMs + stored.idleTimeoutS() * 1000, stored.endOfLifeMs());
        }

        SessionInfo info() {
            Interpreter live = interpreter;
            return new SessionInfo(stored.id(), stored.language(), Instant.ofEpochMilli(stored.createdAtMs()).toString(),
                    Instant.ofEpochMilli(expiresAtMs()).toString(), Instant.ofEpochMilli(lastUsedMs).toString(),
                    stored.idleTimeoutS(), stored.restore(), live != null && live.alive() ? "running" : "dormant",
                    stored.limits());
        }
    }

    private SessionManager(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config, InstantSource clock)
            throws IOException {
        this.clock = clock;
        this.sandbox = sandbox;
        this.runtimes = runtimes;
        this.config = config;
        this.root = config.dataDir().resolve("sessions");
        Files.createDirectories(root);
        if (sandbox.sessionUid(0) >= 0) {
            // bubblewrap binds a workspace as the session's uid: every directory above it must let others search
            for (Path dir : List.of(config.dataDir(), root)) {
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
            }
            for (Path up = config.dataDir().toAbsolutePath().getParent(); up != null; up = up.getParent()) {
                if (!Files.getPosixFilePermissions(up).contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
                    throw new IOException("the sandboxes cannot reach " + config.dataDir() + ": " + up
                            + " is not searchable by other users; choose a data directory outside it (e.g."
                            + " /var/lib/crucible)");
                }
            }
        }
        this.disk = WorkspaceDisk.detect(config.dataDir(), sandbox.sessionUid(0) >= 0);
        LOG.log(disk.enforced() ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING, "sessions: "
                + disk.describe());
        this.memoryBudgetMb = config.memoryBudgetMb() > 0 ? config.memoryBudgetMb() : Math.max(1024,
                ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                        .getOperatingSystemMXBean()).getTotalMemorySize() / (1024 * 1024) - 1024);
        this.diskBudgetBytes = config.diskBudgetBytes() > 0 ? config.diskBudgetBytes()
                : (long) (Files.getFileStore(root).getTotalSpace() * 0.9);
        this.reaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "crucible-session-reaper");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Loads the sessions kept under the data directory (removing those past their lifetime) and starts the reaper.
     *
     * @throws IOException when the data directory cannot be created
     */
    public static SessionManager start(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config)
            throws IOException {
        return start(sandbox, runtimes, config, InstantSource.system());
    }

    /**
     * As {@link #start(Sandbox, RuntimeRegistry, SessionConfig)}, with {@code clock} as the time of idle timeouts,
     * lifetimes and the times a session reports (a test advances its own clock and calls {@link #reap()}).
     */
    public static SessionManager start(Sandbox sandbox, RuntimeRegistry runtimes, SessionConfig config,
            InstantSource clock) throws IOException {
        SessionManager manager = new SessionManager(sandbox, runtimes, config, clock);
        manager.load();
        long every = Math.max(10, config.reapEvery().toMillis());
        manager.reaper.scheduleWithFixedDelay(manager::reap, every, every, TimeUnit.MILLISECONDS);
        return manager;
    }

    private void load() {
        try (var dirs = Files.list(root)) {
            for (Path dir : dirs.toList()) {
                Path file = dir.resolve("session.json");
                if (!Files.isRegularFile(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    if (Files.isDirectory(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                        sweep(dir); // a delete (or a create) cut short: never a session again
                    }
                    continue;
                }
                try {
                    Stored stored = json.readValue(file.toFile(), Stored.class);
                    if (!dir.getFileName().toString().equals(stored.id())) {
                        continue;
                    }
                    if (clock.millis() > stored.endOfLifeMs()) {
                        removeFiles(new Session(stored, true));
                        continue;
                    }
                    disk.attach(dir); // a clean stop unmounted it; after a kill -9 it is still mounted
                    synchronized (numbers) {
                        if (stored.number() >= config.maxSessions() || numbers.get(stored.number())) {
                            int number = numbers.nextClearBit(0);
                            stored = new Stored(stored.id(), stored.owner(), stored.language(), stored.limits(),
                                    stored.idleTimeoutS(), stored.createdAtMs(), stored.endOfLifeMs(), stored.restore(),
                                    number);
                            chownTree(dir.resolve("workspace"), sandbox.sessionUid(number));
                            writeStored(dir, stored);
                        }
                        numbers.set(stored.number());
                        reservedMb.put(stored.number(), stored.limits().memoryMb());
                    }
                    Path workspace = dir.resolve("workspace");
                    int uid = sandbox.sessionUid(stored.number());
                    if (uid >= 0 && Files.isDirectory(workspace, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                            && !Integer.valueOf(uid).equals(Files.getAttribute(workspace, "unix:uid",
                            java.nio.file.LinkOption.NOFOLLOW_LINKS))) {
                        chownTree(workspace, uid); // another uid block than the last run's (UidLease)
                    }
                    sessions.put(stored.id(), new Session(stored, true));
                } catch (IOException | RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot load the session in " + dir + ": " + e.getMessage());
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list " + root + ": " + e.getMessage());
        }
        if (!sessions.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "kept " + sessions.size() + " sessions from " + root);
        }
    }

    /** What a delete cut short left: removed as the owner of its workspace (no sandbox runs for it). */
    private void sweep(Path dir) {
        int owner = -1;
        try {
            Path workspace = dir.resolve("workspace");
            if (sandbox.sessionUid(0) >= 0 && Files.isDirectory(workspace, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                owner = (Integer) Files.getAttribute(workspace, "unix:uid", java.nio.file.LinkOption.NOFOLLOW_LINKS);
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot read the owner of " + dir, e);
        }
        removeLeftovers(dir, new Workspace(dir.resolve("workspace"), owner));
    }

    /** A workspace moving to another uid (its number was taken): only while no sandbox runs for it. */
    private static void chownTree(Path workspace, int uid) throws IOException {
        if (uid < 0) {
            return;
        }
        try (var walk = Files.walk(workspace)) {
            for (Path p : walk.toList()) {
                Files.setAttribute(p, "unix:uid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(p, "unix:gid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
            }
        }
    }

    /** A session to create: every field optional. */
    public record CreateRequest(String language, SessionLimits limits, Long idleTimeoutS, String restore) {}

    /**
     * Creates a session and starts its interpreter.
     *
     * @throws RequestException for an unknown language or one without sessions, bad limits or restore
     * @throws RequestException {@code too_many_sessions} at the global or the owner's cap
     */
    public SessionInfo create(String owner, CreateRequest request) throws InterruptedException {
        String language = request.language() == null || request.language().isBlank() ? "python" : request.language();
        LanguageRuntime runtime = runtimes.find(language).orElseThrow(() -> new RequestException(ErrorCode.UNKNOWN_LANGUAGE, "unknown language '" + language.strip() + "'"));
        if (!runtime.interactive()) {
            throw new RequestException(ErrorCode.RUNTIME_UNAVAILABLE, "runtime " + runtime.language()
                    + (runtime.available() ? " has no session agent; sessions run: " + interactiveLanguages()
                            : " is not available: " + runtime.unavailableReason()));
        }
        SessionLimits limits = request.limits() == null ? config.limits() : request.limits();
        limits = SessionLimits.DEFAULT.with(limits.memoryMb(), limits.pids(), limits.cpus(), limits.timeoutMs(),
                limits.outputBytes()); // validated
        long idle = request.idleTimeoutS() == null ? config.idleTimeout().toSeconds() : request.idleTimeoutS();
        if (idle < 1 || idle > config.maxLifetime().toSeconds()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "idle_timeout_s must be between 1 and "
                    + config.maxLifetime().toSeconds());
        }
        String restore = request.restore() == null ? "none" : request.restore();
        if (!restore.equals("none") && !restore.equals("replay")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "restore must be \"none\" or \"replay\"");
        }
        int number;
        synchronized (numbers) {
            if (sessions.size() >= config.maxSessions()) {
                throw new RequestException(ErrorCode.TOO_MANY_SESSIONS, "the server holds its maximum of "
                        + config.maxSessions() + " sessions; delete one or wait for idle ones to expire");
            }
            long mine = sessions.values().stream().filter(s -> s.stored.owner().equals(owner)).count();
            if (mine >= config.maxPerOwner()) {
                throw new RequestException(ErrorCode.TOO_MANY_SESSIONS, "this token holds its maximum of "
                        + config.maxPerOwner() + " sessions; delete one first");
            }
            long memory = reservedMb.values().stream().mapToLong(Integer::longValue).sum();
            if (memory + limits.memoryMb() > memoryBudgetMb) {
                throw new RequestException(ErrorCode.MEMORY_BUDGET_EXHAUSTED, "sessions already reserve " + memory + " of the "
                        + memoryBudgetMb + " MiB of memory the server gives them; this one needs " + limits.memoryMb()
                        + ": delete a session, ask for a smaller memory_mb, or wait for idle ones to expire");
            }
            long quota = Math.max(WorkspaceDisk.MIN_BYTES, config.workspaceQuota());
            long disk = (long) reservedMb.size() * quota;
            if (disk + quota > diskBudgetBytes) {
                throw new RequestException(ErrorCode.DISK_BUDGET_EXHAUSTED, "sessions already reserve " + disk / (1 << 20)
                        + " of the " + diskBudgetBytes / (1 << 20) + " MiB of disk the server gives them and each"
                        + " workspace takes " + quota / (1 << 20) + " MiB: delete a session or wait for idle ones to"
                        + " expire");
            }
            number = numbers.nextClearBit(0);
            numbers.set(number);
            reservedMb.put(number, limits.memoryMb());
        }
        byte[] idBytes = new byte[16];
        random.nextBytes(idBytes);
        long now = clock.millis();
        Stored stored = new Stored(HEX.formatHex(idBytes), owner, runtime.language(), limits, idle, now,
                now + config.maxLifetime().toMillis(), restore, number);
        Session session = new Session(stored, false);
        try {
            Files.createDirectory(session.dir);
            Files.setPosixFilePermissions(session.dir, PosixFilePermissions.fromString("rwx--x--x"));
            disk.create(session.dir, config.workspaceQuota());
            writeStored(session.dir, stored);
            session.lock.lock();
            try {
                sessions.put(stored.id(), session);
                session.interpreter = startInterpreter(session);
            } finally {
                session.lock.unlock();
            }
            return session.info();
        } catch (IOException | RuntimeException e) {
            sessions.remove(stored.id());
            removeFiles(session);
            release(number);
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "cannot start the " + runtime.language()
                    + " interpreter: " + e.getMessage());
        }
    }

    private String interactiveLanguages() {
        return String.join(", ", runtimes.list().stream().filter(LanguageRuntime::interactive)
                .map(LanguageRuntime::language).toList());
    }

    private void writeStored(Path dir, Stored stored) throws IOException {
        Path temp = dir.resolve("session.json.tmp");
        Files.write(temp, json.writeValueAsBytes(stored));
        Files.move(temp, dir.resolve("session.json"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private Interpreter startInterpreter(Session session) throws IOException, InterruptedException {
        LanguageRuntime runtime = runtimes.find(session.stored.language()).orElseThrow(() -> new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "runtime " + session.stored.language() + " is no longer configured"));
        SessionLimits l = session.stored.limits();
        Limits limits = new Limits(Limits.MAXIMUM.timeoutMs(), Limits.MAXIMUM.cpuMs(), l.memoryMb(), 64 * 1024, l.pids());
        SandboxSpec spec = new SandboxSpec(runtime.sessionArgv(limits), runtime.env(), Map.of(), null, false,
                runtime.binds(), runtime.rootfs(), null, limits, session.dir.resolve("workspace"));
        Path log = session.dir.resolve("interpreter.log");
        Files.write(log, new byte[0]);
        Sandbox.Interactive box = sandbox.open(spec, session.stored.number(), l.cpus(), log);
        return Interpreter.start(box, json, READY_MS, log);
    }

    /** The session {@code id} of {@code owner}; anyone else's, or none, is not found. */
    private Session find(String owner, String id) {
        Session s = id == null ? null : sessions.get(id);
        if (s == null || s.gone || !s.stored.owner().equals(owner)) {
            throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no session " + shown(id));
        }
        return s;
    }

    private static String shown(String id) {
        return id == null ? "null" : id.length() > 40 ? id.substring(0, 40) + "…" : id.replaceAll("[^0-9a-zA-Z_-]", "?");
    }

    public SessionInfo get(String owner, String id) {
        return find(owner, id).info();
    }

    /** The owner's sessions, oldest first. */
    public List<SessionInfo> list(String owner) {
        return sessions.values().stream().filter(s -> s.stored.owner().equals(owner) && !s.gone)
                .sorted(Comparator.comparingLong(s -> s.stored.createdAtMs())).map(Session::info).toList();
    }

    /** How many sessions exist (all owners). */
    public int size() {
        return sessions.size();
    }

    /**
     * Runs one cell.
     *
     * @param mode {@code auto} (default), {@code exec} or {@code single}
     * @param timeoutMs this cell's timeout, or null for the session's
     * @throws RequestException {@code session_not_found}, {@code cell_too_large}, {@code session_busy}
     */
    public CellResult execute(String owner, String id, String code, String mode, Long timeoutMs)
            throws InterruptedException {
        Session session = find(owner, id);
        if (code == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
        }
        String m = mode == null ? "auto" : mode;
        if (!MODES.contains(m)) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "mode must be one of " + MODES);
        }
        long timeout = timeoutMs == null ? session.stored.limits().timeoutMs() : timeoutMs;
        if (timeout < 1 || timeout > SessionLimits.MAXIMUM.timeoutMs()) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, "timeout_ms must be between 1 and "
                    + SessionLimits.MAXIMUM.timeoutMs());
        }
        if (code.length() > config.maxCellBytes() || code.getBytes(StandardCharsets.UTF_8).length > config.maxCellBytes()) {
            throw new RequestException(ErrorCode.CELL_TOO_LARGE, "the cell is larger than " + config.maxCellBytes() + " bytes");
        }
        if (!session.lock.tryLock(timeout + config.graceMs() + 5_000, TimeUnit.MILLISECONDS)) {
            throw new RequestException(ErrorCode.SESSION_BUSY, "another cell of this session is still running");
        }
        try {
            if (session.gone) {
                throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no session " + id);
            }
            session.lastUsedMs = clock.millis();
            return runCell(session, code, m, timeout);
        } finally {
            session.lastUsedMs = clock.millis();
            session.lock.unlock();
        }
    }

    private CellResult runCell(Session session, String code, String mode, long timeout) throws InterruptedException {
        long start = System.nanoTime();
        boolean restarted = session.restartPending;
        boolean resumed = false;
        Integer replayed = null;
        if (session.interpreter == null || !session.interpreter.alive()) {
            if (session.interpreter != null) {
                session.interpreter.close();
                restarted = true;
            }
            resumed = session.resumePending;
            try {
                session.interpreter = startInterpreter(session);
            } catch (IOException e) {
                session.interpreter = null;
                return failure(CellStatus.SANDBOX_ERROR, "InterpreterUnavailable",
                        "cannot start the interpreter: " + e.getMessage(), start, restarted, resumed);
            }
            session.resumePending = false;
            session.restartPending = false;
            if (resumed && session.stored.restore().equals("replay")) {
                replayed = replay(session);
            } else if (!resumed) {
                clearLog(session); // a fresh interpreter after a crash: the logged cells' variables are gone
            }
        }
        ObjectNode request = json.createObjectNode().put("code", code).put("mode", mode)
                .put("output_bytes", session.stored.limits().outputBytes()).put("timeout_ms", timeout);
        Interpreter.Outcome outcome = session.interpreter.call(request, timeout, config.graceMs());
        return switch (outcome) {
            case Interpreter.Outcome.Answered a -> {
                CellResult r = answered(a.answer(), a.interruptedByTimeout(), timeout, start, restarted, resumed, replayed);
                if (r.status() == CellStatus.OK) {
                    appendLog(session, code, mode);
                }
                yield r;
            }
            case Interpreter.Outcome.Died d -> {
                session.interpreter.close();
                session.restartPending = true;
                String why = d.oomKilled() ? "the interpreter was killed for using more than its "
                        + session.stored.limits().memoryMb() + " MiB"
                        : "the interpreter exited" + (d.exitCode() == null ? "" : " with code " + d.exitCode());
                yield failure(d.oomKilled() ? CellStatus.MEMORY_LIMIT : CellStatus.RUNTIME_ERROR, "InterpreterDied",
                        why + "; the session restarts with a fresh interpreter on the next call", start, restarted,
                        resumed);
            }
            case Interpreter.Outcome.Violated v -> {
                session.interpreter.close();
                session.restartPending = true;
                yield failure(CellStatus.RUNTIME_ERROR, "ProtocolViolation", "the interpreter's answer channel carried " + v.why()
                        + "; cells must not write to the agent's own descriptors. The session restarts with a fresh"
                        + " interpreter on the next call", start, restarted, resumed);
            }
            case Interpreter.Outcome.Stuck s -> {
                session.interpreter.close();
                session.interpreter = null;
                String message = "the cell did not stop within " + config.graceMs() + " ms of being interrupted at "
                        + timeout + " ms; the session was restarted and its variables are lost";
                try {
                    session.interpreter = startInterpreter(session);
                    clearLog(session);
                } catch (IOException e) {
                    session.restartPending = true;
                    message += " (the new interpreter did not start: " + e.getMessage() + ")";
                }
                yield failure(CellStatus.TIMEOUT, "TimeoutError", message, start, true, resumed);
            }
        };
    }

    private CellResult answered(JsonNode a, boolean byTimeout, long timeout, long start, boolean restarted,
            boolean resumed, Integer replayed) {
        CellStatus status = CellStatus.fromAgent(a.path("status").asString(""));
        CellResult.CellError error = null;
        if (a.hasNonNull("error")) {
            JsonNode e = a.get("error");
            error = new CellResult.CellError(e.path("name").asString(""), e.path("message").asString(""),
                    e.path("traceback").asString(""));
        }
        if (byTimeout && (status == CellStatus.INTERRUPTED || status == CellStatus.OK || status == CellStatus.RUNTIME_ERROR)) {
            status = CellStatus.TIMEOUT;
            String why = "the cell ran past its " + timeout + " ms and was interrupted; the session and its variables"
                    + " are kept";
            error = error == null ? new CellResult.CellError("TimeoutError", why, "")
                    : new CellResult.CellError(error.name(), why, error.traceback());
        }
        List<CellResult.Display> display = null;
        if (a.hasNonNull("display")) {
            display = new ArrayList<>();
            for (JsonNode d : a.get("display")) {
                display.add(new CellResult.Display(d.path("mime").asString(""), d.path("data").asString("")));
            }
        }
        return new CellResult(status, a.path("stdout").asString(""), a.path("stderr").asString(""),
                a.path("stdout_truncated").asBoolean(false), a.path("stderr_truncated").asBoolean(false),
                a.hasNonNull("result") ? a.get("result").asString() : null, display, error,
                a.path("execution_count").asInt(0), millisSince(start), restarted, resumed, replayed);
    }

    private static CellResult failure(CellStatus status, String name, String message, long start,
            boolean restarted, boolean resumed) {
        return new CellResult(status, "", "", false, false, null, null, new CellResult.CellError(name, message, ""), 0,
                millisSince(start), restarted, resumed, null);
    }

    private static long millisSince(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    private Path cellLog(Session session) {
        return session.dir.resolve("cells.jsonl");
    }

    private void appendLog(Session session, String code, String mode) {
        try {
            byte[] line = (json.writeValueAsString(Map.of("code", code, "mode", mode)) + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            Files.write(cellLog(session), line, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot log a cell of session " + session.stored.id(), e);
        }
    }

    private void clearLog(Session session) {
        try {
            Files.deleteIfExists(cellLog(session));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot clear the cell log of " + session.stored.id(), e);
        }
    }

    /** Replays the logged cells in a fresh interpreter; a line cut by a kill is skipped. Returns how many ran ok. */
    private int replay(Session session) throws InterruptedException {
        List<String> lines;
        try {
            lines = Files.exists(cellLog(session)) ? Files.readAllLines(cellLog(session)) : List.of();
        } catch (IOException e) {
            return 0;
        }
        int ok = 0;
        for (String line : lines) {
            JsonNode cell;
            try {
                cell = json.readTree(line);
            } catch (RuntimeException e) {
                continue;
            }
            ObjectNode request = json.createObjectNode().put("code", cell.path("code").asString(""))
                    .put("mode", cell.path("mode").asString("exec")).put("output_bytes", 1024);
            var outcome = session.interpreter.call(request, session.stored.limits().timeoutMs(), config.graceMs());
            if (outcome instanceof Interpreter.Outcome.Answered a && CellStatus.fromAgent(a.answer().path("status").asString("")) == CellStatus.OK) {
                ok++;
            } else if (!(outcome instanceof Interpreter.Outcome.Answered)) {
                break;
            }
        }
        return ok;
    }

    /**
     * Interrupts the running cell (SIGINT: KeyboardInterrupt in Python); the session and its variables stay.
     *
     * @return whether a cell was running
     */
    public boolean interrupt(String owner, String id) {
        Session session = find(owner, id);
        Interpreter live = session.interpreter;
        return live != null && live.interrupt();
    }

    /** Replaces the interpreter by a fresh one (variables gone, files kept). */
    public SessionInfo restart(String owner, String id) throws InterruptedException {
        Session session = find(owner, id);
        Interpreter live = session.interpreter;
        if (live != null) {
            live.close(); // ends a running cell too: its caller gets the interpreter's death
        }
        session.lock.lock();
        try {
            if (session.interpreter != null) {
                session.interpreter.close();
            }
            session.interpreter = null;
            clearLog(session);
            try {
                session.interpreter = startInterpreter(session);
                session.restartPending = false;
                session.resumePending = false;
            } catch (IOException e) {
                throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "cannot start the interpreter: " + e.getMessage());
            }
            session.lastUsedMs = clock.millis();
            return session.info();
        } finally {
            session.lock.unlock();
        }
    }

    /** Deletes the session: its interpreter, its files, its log. */
    public void delete(String owner, String id) {
        remove(find(owner, id));
    }

    private void remove(Session session) {
        session.gone = true;
        Interpreter live = session.interpreter;
        if (live != null) {
            live.close();
        }
        session.lock.lock();
        try {
            if (session.interpreter != null) {
                session.interpreter.close();
            }
            session.interpreter = null;
            sessions.remove(session.stored.id(), session);
            removeFiles(session);
            release(session.stored.number());
        } finally {
            session.lock.unlock();
        }
    }

    private void release(int number) {
        synchronized (numbers) {
            numbers.clear(number);
            reservedMb.remove(number);
        }
    }

    /**
     * Removes a session's directory. The record that makes it a session ({@code session.json}) goes first, so a
     * removal cut short (a crash, a file that would not go) never brings the session back: {@link #load} sweeps what
     * is left. The workspace goes through descriptors, never by a path its sandbox could change, whatever modes the
     * sandbox left in it.
     */
    private void removeFiles(Session session) {
        try {
            Files.deleteIfExists(session.dir.resolve("session.json"));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove " + session.dir.resolve("session.json") + ": "
                    + e.getMessage());
        }
        removeLeftovers(session.dir, session.workspace);
    }

    /** Removes a directory that is no session (any more): its workspace through {@code workspace}, then the rest. */
    private void removeLeftovers(Path dir, Workspace workspace) {
        disk.detach(dir); // an image's files go with the image; its mount point was always empty
        try {
            if (Files.isDirectory(dir.resolve("workspace"), java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    && !Files.exists(dir.resolve(WorkspaceDisk.IMAGE), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                workspace.clear();
            }
            Files.deleteIfExists(dir.resolve("workspace"));
            for (String name : List.of("session.json.tmp", "cells.jsonl", "interpreter.log", WorkspaceDisk.IMAGE)) {
                Files.deleteIfExists(dir.resolve(name));
            }
            Files.deleteIfExists(dir);
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove all of " + dir + " (it is no session; the next start"
                    + " tries again): " + e.getMessage());
        }
    }

    /** The files of a session, with the caps and the quota of this manager. */
    public SessionFiles files(String owner, String id) {
        Session session = find(owner, id);
        session.lastUsedMs = clock.millis();
        return new SessionFiles(session.workspace, config.maxFileBytes(), config.workspaceQuota());
    }

    /** Removes sessions idle past their timeout or past their lifetime; a session running a cell waits. */
    void reap() {
        long now = clock.millis();
        for (Session session : List.copyOf(sessions.values())) {
            if (now >= session.expiresAtMs() && session.lock.tryLock()) {
                try {
                    if (now >= session.expiresAtMs()) {
                        LOG.log(System.Logger.Level.INFO, "removing expired session " + session.stored.id());
                        remove(session);
                    }
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot remove session " + session.stored.id(), e);
                } finally {
                    session.lock.unlock();
                }
            }
        }
    }

    /** Stops the reaper and every interpreter; the sessions' files and logs stay for the next start. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        reaper.shutdownNow();
        for (Session session : sessions.values()) {
            Interpreter live = session.interpreter;
            if (live != null) {
                live.close();
            }
            disk.detach(session.dir); // the files stay in the image; the next start mounts it again
        }
    }
}
