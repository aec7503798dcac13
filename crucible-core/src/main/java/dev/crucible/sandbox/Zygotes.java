package dev.crucible.sandbox;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import dev.crucible.health.Replacements;

/**
 * The zygotes of one launcher (docs/zygote.md): which launches a zygote serves, one zygote per distinct warm-pool
 * sandbox (the Python agent's command, environment, root and binds: one per runtime and image), started on first use
 * and replaced when it dies. Where this host lacks what a zygote needs, {@link #unavailable()} says why and every
 * launch is spawned. Thread-safe.
 */
final class Zygotes implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");
    /** The agent whose launches a zygote serves: the Python warm-pool agent. */
    static final String PYTHON_AGENT = resource("/dev/crucible/runtime/agents/python");
    static final String PYTHON_ZYGOTE = resource("/dev/crucible/runtime/agents/python-zygote");
    /** crucible-init (without a C library: no start-up cost), or null when this build has none. */
    private static final byte[] INIT = builtBinary("crucible-init");
    /** The child's set-up (src/main/c/zygote-child.c), a library the zygote loads, or null when this build has none. */
    private static final byte[] CHILD_SETUP = builtBinary("crucible-zygote-child");
    /** A zygote's own uid: the last of the launcher's uid block, below which slots and sessions are numbered. */
    static final int UID_FROM_END = 1;
    /** Child uids inside a zygote's user namespace: slot N is {@code CHILD_UID_BASE + N} there. */
    static final int CHILD_UID_BASE = 1000;

    private final LaunchCommand command;
    private final ProcessSpawner spawner;
    private final ExecutorService io;
    private final Path workRoot;
    private final int uidBase;
    private final int slots;
    private final String unavailable;
    /** The program every child loads (a spawned sandbox's), copied into each zygote's control directory. */
    private final Path childSeccomp;
    /** The zygote's own program ({@code SeccompProgram.Socket.ZYGOTE}), loaded by its bwrap. */
    private final java.util.function.Supplier<Path> zygoteSeccomp;
    /** The synthetic /etc the zygote's box binds: its binds' mount points are made once, when a zygote starts. */
    private final SyntheticEtc etc;
    private final Map<List<Object>, Zygote> running = new ConcurrentHashMap<>();
    private final Map<List<Object>, String> failed = new ConcurrentHashMap<>();
    private final Map<List<Object>, Integer> uids = new ConcurrentHashMap<>();
    /** The launch each kind of zygote was first started for: what a replacement is started from. */
    private final Map<List<Object>, SandboxSpec> specs = new ConcurrentHashMap<>();
    /** Kinds whose zygote is being replaced in the background: their launches are spawned meanwhile. */
    private final Set<List<Object>> replacing = ConcurrentHashMap.newKeySet();
    private final Replacements replacements;
    /** Checks every zygote's answers ({@link #WATCH_MS}); started with the first zygote. */
    private final ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "crucible-zygote-watch");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean closed;
    /** Zygotes started so far (each gets a directory of its own); guarded by this. */
    private int starts;
    /**
     * How long a stopped zygote (SIGSTOP, a tracer) may leave a request unanswered (a fork without "forked", a kill
     * without "exit") before it is killed and replaced. Its loop answers in microseconds when it runs.
     */
    static final long ANSWER_MS = 2_000;
    /**
     * How long a zygote that is not stopped may leave an answer owed before it is replaced all the same: one behind on
     * its requests on a busy host, or waiting in the kernel (a network namespace made while others are torn down can
     * wait seconds on the kernel's locks), is slow, not stuck, and the runs waiting on it are started again elsewhere
     * meanwhile ({@link Launched#TAKE_MS}); one whose loop is blocked for good is replaced at this bound.
     */
    static final long BUSY_ANSWER_MS = 30_000;
    private static final long WATCH_MS = 200;

    /**
     * @param uidBase the launcher's first slot uid, or -1 when not root
     * @param disabled why the operator turned zygotes off, or null
     */
    Zygotes(LaunchCommand command, ProcessSpawner spawner, ExecutorService io, Path workRoot, int uidBase, int slots,
            String disabled, Path childSeccomp, java.util.function.Supplier<Path> zygoteSeccomp, SyntheticEtc etc,
            Replacements replacements) {
        this.replacements = replacements;
        this.etc = etc;
        this.childSeccomp = childSeccomp;
        this.zygoteSeccomp = zygoteSeccomp;
        this.command = command;
        this.spawner = spawner;
        this.io = io;
        this.workRoot = workRoot;
        this.uidBase = uidBase;
        this.slots = slots;
        this.unavailable = disabled != null ? disabled
                : uidBase < 0 ? "the server does not run as root (a zygote maps the slots' uids into its namespace)"
                : !command.viaHelper() ? "crucible-launch is not in this build (the sh + setpriv chain cannot map uids)"
                : CHILD_SETUP == null ? "the zygote's child set-up (zygote-child.c) is not in this build"
                : null;
    }

    /** Why no zygote runs on this host, as a sentence, or null when they do. */
    String unavailable() {
        return unavailable;
    }

    /**
     * Whether {@code spec} is a launch a zygote makes: the Python warm-pool agent of the host's (or the operator's
     * rootfs') interpreter, nothing per-run bound in, and no zygote of its kind failed or being replaced. Never in an
     * image: a zygote holds capabilities in its namespace while its interpreter starts, and an image's interpreter, its
     * standard library, {@code sitecustomize}, {@code .pth} files and {@code PYTHON*} settings are the image's code.
     */
    boolean serves(SandboxSpec spec) {
        List<String> argv = spec.command();
        if (unavailable != null || argv.size() != 4 || !"-c".equals(argv.get(1)) || !argv.get(2).equals(PYTHON_AGENT)
                || !argv.get(0).endsWith("python3") || spec.egress() != null || spec.workspace() != null
                || !spec.files().isEmpty() || spec.buildDir() != null || spec.init()
                || spec.root() instanceof SandboxRoot.Writable || spec.root() instanceof SandboxRoot.Image) {
            return false;
        }
        List<Object> key = key(spec);
        return !failed.containsKey(key) && !replacing.contains(key);
    }

    /**
     * Forks a child for {@code spec} as the slot's uid into {@code group}, starting the zygote first if needed.
     *
     * @throws IOException when the zygote cannot be started or asked; the caller then spawns
     */
    ZygoteChild fork(SandboxSpec spec, int slotUid, Cgroups.RunGroup group) throws IOException, InterruptedException {
        Zygote zygote = zygoteFor(spec, slotUid, group);
        long tmpfs = command.tmpfsBytes(spec);
        try {
            return zygote.fork(CHILD_UID_BASE + (slotUid - uidBase), group == null ? List.of() : group.procsFiles(),
                    tmpfs, command.rlimitSpec(slotUid, group == null, spec));
        } catch (IOException e) {
            if (zygote.alive()) { // it stopped reading its control socket
                replace(key(spec), zygote, Replacements.Reason.UNANSWERED, e.getMessage());
            }
            throw e;
        }
    }

    private static List<Object> key(SandboxSpec spec) {
        return List.of(spec.command(), spec.env(), spec.root(), spec.readOnlyBindsIfPresent(), spec.limits().memoryMb());
    }

    /** The running zygote for {@code spec}; a new one is proved by a child of the launch's slot uid and cgroups. */
    private synchronized Zygote zygoteFor(SandboxSpec spec, int slotUid, Cgroups.RunGroup group)
            throws IOException, InterruptedException {
        List<Object> key = key(spec);
        Zygote zygote = running.get(key);
        if (zygote != null && zygote.alive()) {
            return zygote;
        }
        if (zygote != null || replacing.contains(key)) {
            replace(key, zygote, Replacements.Reason.DIED, "it ended");
            throw new IOException("the zygote is being replaced");
        }
        if (closed) {
            throw new IOException("the launcher is closing");
        }
        specs.putIfAbsent(key, spec);
        zygote = startOne(key, spec);
        try {
            probe(zygote, spec, slotUid, group);
        } catch (IOException e) {
            zygote.close();
            failed.put(key, e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "no zygote for " + spec.command().getFirst() + " (its runs are spawned): "
                    + e.getMessage());
            throw e;
        }
        running.put(key, zygote);
        watch();
        return zygote;
    }

    /** Starts the watchdog once: every {@link #WATCH_MS}, a zygote that died or left a request unanswered is replaced. */
    private void watch() {
        if (watched.compareAndSet(false, true)) {
            watchdog.scheduleWithFixedDelay(this::check, WATCH_MS, WATCH_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
        }
    }

    private final java.util.concurrent.atomic.AtomicBoolean watched = new java.util.concurrent.atomic.AtomicBoolean();

    private void check() {
        try {
            long now = System.nanoTime();
            running.forEach((key, zygote) -> {
                long waited = zygote.unansweredFor(now) / 1_000_000;
                if (!zygote.alive()) {
                    replace(key, zygote, Replacements.Reason.DIED, "it ended");
                } else if (waited > ANSWER_MS && zygote.stopped()) {
                    replace(key, zygote, Replacements.Reason.UNANSWERED, "a request has waited " + waited
                            + " ms for its answer, and it is stopped (SIGSTOP or a tracer)");
                } else if (waited > BUSY_ANSWER_MS) {
                    replace(key, zygote, Replacements.Reason.UNANSWERED, "a request has waited " + waited
                            + " ms for its answer (the bound is " + BUSY_ANSWER_MS + " ms)");
                }
            });
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "the zygote watchdog failed a check", e);
        }
    }

    /**
     * Gives up on {@code zygote} (killed with every child it still has: a run already started becomes a sandbox error,
     * one whose program never started is run again by the caller) and starts its successor in the background; the
     * kind's launches are spawned until it is ready. Once per zygote.
     */
    void replace(List<Object> key, Zygote zygote, Replacements.Reason reason, String detail) {
        synchronized (this) {
            if (closed || (zygote != null && running.get(key) != zygote) || (zygote == null && replacing.contains(key))) {
                return;
            }
            running.remove(key);
            replacing.add(key);
        }
        replacements.replaced(Replacements.Part.ZYGOTE, reason, "the " + name(key) + " zygote", detail
                + "; its runs are spawned until a new one is ready");
        Thread.ofPlatform().daemon().name("crucible-zygote-start").start(() -> {
            try {
                if (zygote != null) {
                    zygote.lose("the zygote was replaced (" + detail + ")");
                }
                Zygote next = startOne(key, specs.get(key));
                synchronized (this) {
                    if (closed) {
                        next.close();
                    } else {
                        running.put(key, next);
                    }
                }
            } catch (IOException | RuntimeException e) {
                failed.put(key, "its replacement did not start: " + e.getMessage());
                LOG.log(System.Logger.Level.WARNING, "the " + name(key) + " zygote's replacement did not start (its runs"
                        + " are spawned from now on): " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                replacing.remove(key);
            }
        });
    }

    /** A kind of zygote as people read it: {@code python} (the host's), or {@code python@<rootfs>}. */
    private static String name(List<Object> key) {
        @SuppressWarnings("unchecked")
        List<String> command = (List<String>) key.get(0);
        String interpreter = Path.of(command.getFirst()).getFileName().toString().replaceFirst("3$", "");
        return key.get(2) instanceof SandboxRoot.Usr(Path dir) ? interpreter + "@" + dir : interpreter;
    }

    /** The zygotes' parts for readiness: degraded while one is being replaced or could not start (runs are spawned). */
    List<dev.crucible.health.PartStatus> parts() {
        if (unavailable != null) {
            return List.of();
        }
        List<dev.crucible.health.PartStatus> parts = new ArrayList<>();
        for (List<Object> key : specs.keySet()) {
            String part = "zygote:" + name(key);
            if (replacing.contains(key)) {
                parts.add(dev.crucible.health.PartStatus.degraded(part, "being replaced; its runs are spawned meanwhile"));
            } else if (failed.containsKey(key)) {
                parts.add(dev.crucible.health.PartStatus.degraded(part, "not running (" + failed.get(key)
                        + "); its runs are spawned"));
            } else {
                parts.add(dev.crucible.health.PartStatus.ok(part));
            }
        }
        return parts;
    }

    /** Starts a zygote of {@code key}'s kind from {@code spec} (not yet proved by a child). */
    private Zygote startOne(List<Object> key, SandboxSpec spec) throws IOException, InterruptedException {
        int uid;
        int index;
        synchronized (this) {
            // one uid per kind of zygote for the launcher's life (a replacement takes its predecessor's, never a live
            // zygote's); one directory per start
            uid = uids.computeIfAbsent(key, k -> uidBase + UidLease.BLOCK - UID_FROM_END - uids.size());
            index = starts++;
        }
        Path dir = workRoot.resolve("zygote-" + index);
        Files.createDirectories(dir);
        Files.setAttribute(dir, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Path program = dir.resolve("seccomp.bpf"); // the children's program, read once by the zygote at its start
        Files.copy(childSeccomp, program, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.setAttribute(program, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(program, PosixFilePermissions.fromString("r--------"));
        Path init = dir.resolve("init"); // each child namespace's pid 1: crucible-init, else crucible-launch --init
        if (INIT != null) {
            Files.write(init, INIT);
        } else {
            Files.copy(command.helper(), init, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        Files.setPosixFilePermissions(init, PosixFilePermissions.fromString("r-xr-xr-x"));
        Path setup = dir.resolve("zygote-child.so"); // the children's set-up, loaded by the zygote at its start
        Files.write(setup, CHILD_SETUP);
        Files.setPosixFilePermissions(setup, PosixFilePermissions.fromString("r-xr-xr-x"));
        Path log = workRoot.resolve("zygote-" + index + ".log");
        etc.addMountPoints(spec); // its children mount nothing from the host: the box is made once
        String map = "0 " + uid + " 1," + CHILD_UID_BASE + " " + uidBase + " " + slots;
        try {
            return Zygote.start(spawner, command.zygoteArgv(uid, map, spec, dir, PYTHON_ZYGOTE, zygoteSeccomp.get()),
                    dir, log, io);
        } catch (IOException e) {
            failed.put(key, e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "no zygote for " + spec.command().getFirst() + " (its runs are spawned): "
                    + e.getMessage());
            throw e;
        }
    }

    /**
     * Forks one child that runs an empty program, as the launch's slot uid into its cgroups, exactly as the run's own
     * child will be made: a host where the zygote starts but its children cannot join their cgroups or make their
     * namespaces (an older cgroup v2 kernel, a container's seccomp profile, a masked /proc) is found here, once, and its
     * runs are spawned. The probe has ended before the run starts (its CPU is not the run's: that is counted from the
     * run's start).
     */
    private void probe(Zygote zygote, SandboxSpec spec, int slotUid, Cgroups.RunGroup group)
            throws IOException, InterruptedException {
        ZygoteChild child = zygote.fork(CHILD_UID_BASE + (slotUid - uidBase),
                group == null ? List.of() : group.procsFiles(), command.tmpfsBytes(spec), "");
        try (var in = child.getOutputStream()) {
            in.write("0000000400000000pass".getBytes(StandardCharsets.US_ASCII)); // the pool agent's frame
        } catch (IOException e) {
            // it died before reading: its status says why
        }
        java.util.concurrent.Future<byte[]> err = io.submit(() -> child.getErrorStream().readAllBytes());
        child.getInputStream().close();
        if (!child.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new IOException("the zygote's first child did not finish");
        }
        String stderr;
        try {
            stderr = new String(err.get(5, java.util.concurrent.TimeUnit.SECONDS), StandardCharsets.UTF_8).strip();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            stderr = "";
        } finally {
            child.getErrorStream().close();
        }
        if (child.exitValue() != 0) {
            throw new IOException("the zygote's children cannot start here: "
                    + (stderr.isEmpty() ? "exit " + child.exitValue() : stderr.lines().findFirst().orElse(stderr)));
        }
    }

    /** The reasons zygotes could not start, one per failed kind of launch (shown by {@code crucible runtimes}). */
    List<String> failures() {
        return new ArrayList<>(failed.values());
    }

    /**
     * Which isolation path is in force, as {@code crucible runtimes} prints it: the zygote for Python (and how many run),
     * or spawn with the reason.
     */
    String describe() {
        if (unavailable != null) {
            return "isolation path: spawn for every runtime (no zygote: " + unavailable + ")";
        }
        if (!failed.isEmpty()) {
            return "isolation path: spawn for every runtime (the Python zygote failed: " + failed.values().iterator().next()
                    + ")";
        }
        return "isolation path: zygote for python (" + count() + " running; a child forked per run into fresh"
                + " namespaces, docs/zygote.md); spawn for the other runtimes, image runtimes (an image's interpreter"
                + " and site code never run in a zygote), sessions and runs with files or egress";
    }

    /** How many zygotes run now. */
    int count() {
        return (int) running.values().stream().filter(Zygote::alive).count();
    }

    @Override
    public void close() {
        List<Zygote> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(running.values());
            running.clear();
        }
        watchdog.shutdownNow();
        all.forEach(Zygote::close);
    }

    private static byte[] builtBinary(String name) {
        try {
            return LaunchCommand.builtBinary(name);
        } catch (IOException e) {
            return null;
        }
    }

    private static String resource(String name) {
        try (InputStream in = Zygotes.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + name, e);
        }
    }
}
