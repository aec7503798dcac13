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
import java.util.concurrent.ExecutorService;

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
    /** Zygotes started so far (each gets a directory of its own); guarded by this. */
    private int starts;

    /**
     * @param uidBase the launcher's first slot uid, or -1 when not root
     * @param disabled why the operator turned zygotes off, or null
     */
    Zygotes(LaunchCommand command, ProcessSpawner spawner, ExecutorService io, Path workRoot, int uidBase, int slots,
            String disabled, Path childSeccomp, java.util.function.Supplier<Path> zygoteSeccomp, SyntheticEtc etc) {
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

    /** Whether {@code spec} is a launch a zygote makes: the Python warm-pool agent, nothing per-run bound in. */
    boolean serves(SandboxSpec spec) {
        List<String> argv = spec.command();
        return unavailable == null && argv.size() == 4 && "-c".equals(argv.get(1))
                && argv.get(2).equals(PYTHON_AGENT) && argv.get(0).endsWith("python3")
                && spec.egress() == null && spec.workspace() == null && spec.files().isEmpty()
                && spec.buildDir() == null && !spec.init() && !(spec.root() instanceof SandboxRoot.Writable)
                && !failed.containsKey(key(spec));
    }

    /**
     * Forks a child for {@code spec} as the slot's uid into {@code group}, starting the zygote first if needed.
     *
     * @throws IOException when the zygote cannot be started or asked; the caller then spawns
     */
    ZygoteChild fork(SandboxSpec spec, int slotUid, Cgroups.RunGroup group) throws IOException, InterruptedException {
        Zygote zygote = zygoteFor(spec, slotUid, group);
        long tmpfs = command.tmpfsBytes(spec);
        return zygote.fork(CHILD_UID_BASE + (slotUid - uidBase), group == null ? List.of() : group.procsFiles(), tmpfs,
                command.rlimitSpec(slotUid, group == null, spec));
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
        if (zygote != null) {
            zygote.close();
            running.remove(key);
        }
        // one uid per kind of zygote for the launcher's life (a replacement takes its predecessor's, never a live
        // zygote's); one directory per start
        int uid = uids.computeIfAbsent(key, k -> uidBase + UidLease.BLOCK - UID_FROM_END - uids.size());
        int index = starts++;
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
        zygote = null;
        String map = "0 " + uid + " 1," + CHILD_UID_BASE + " " + uidBase + " " + slots;
        try {
            zygote = Zygote.start(spawner, command.zygoteArgv(uid, map, spec, dir, PYTHON_ZYGOTE, zygoteSeccomp.get()),
                    dir, log, io);
            probe(zygote, spec, slotUid, group);
        } catch (IOException e) {
            if (zygote != null) {
                zygote.close();
            }
            failed.put(key, e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "no zygote for " + spec.command().getFirst() + " (its runs are spawned): "
                    + e.getMessage());
            throw e;
        }
        running.put(key, zygote);
        return zygote;
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
                + " namespaces, docs/zygote.md); spawn for the other runtimes, sessions and runs with files or egress";
    }

    /** How many zygotes run now. */
    int count() {
        return (int) running.values().stream().filter(Zygote::alive).count();
    }

    @Override
    public synchronized void close() {
        running.values().forEach(Zygote::close);
        running.clear();
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
