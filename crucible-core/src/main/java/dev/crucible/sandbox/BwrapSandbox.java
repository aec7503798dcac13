package dev.crucible.sandbox;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** The bubblewrap launcher: the per-run sequence of {@code sandbox-security.md} 3.2, one step per method. */
final class BwrapSandbox implements Sandbox {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");
    private static final long TEARDOWN_MS = 3_000;

    private final SandboxConfig config;
    private final Path workRoot;
    private final Path seccomp;
    private final Path bwrap;
    private final Path setpriv;
    private final boolean root;
    private final int ownUid;
    private final Cgroups cgroups;
    private final ProcessSpawner spawner;
    private final BlockingQueue<Integer> freeSlots;
    private final int seccompInstructions;
    private final String tuning;
    private final Path helper;
    private final java.util.Map<Integer, Cgroups.RunGroup> prepared = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile boolean closing;
    private final java.util.Set<Process> live = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Names of this instance's run groups start with it: {@code run-<pid>-<instance tag>}. */
    private final String groupPrefix = "run-" + ProcessHandle.current().pid() + "-" + Integer.toHexString(
            java.util.concurrent.ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
    private final List<String> warnings = new ArrayList<>();
    /** The host-wide lease on this launcher's uids when root (no two Crucible processes share a uid), else null. */
    private final UidLease lease;
    private final int uidBase;

    private BwrapSandbox(SandboxConfig config, HostTools tools, byte[] program) throws IOException {
        this.config = config;
        this.workRoot = Files.createTempDirectory(config.workParent(), "crucible-");
        this.bwrap = tools.bwrap();
        this.setpriv = tools.setpriv();
        this.ownUid = tools.uid();
        this.root = ownUid == 0;
        this.seccompInstructions = program.length / 8;
        Files.setPosixFilePermissions(workRoot, PosixFilePermissions.fromString("rwx--x--x"));
        this.seccomp = workRoot.resolve("seccomp.bpf");
        Files.write(seccomp, program);
        Files.setPosixFilePermissions(seccomp, PosixFilePermissions.fromString("rw-------"));
        writeEtc(workRoot.resolve("etc"));
        this.helper = config.launchHelper() ? extractHelper(workRoot) : null;
        this.cgroups = Cgroups.detect();
        cgroups.removeStale();
        this.tuning = cgroups instanceof Cgroups.None ? "favordynmods: not needed (no cgroups)"
                : CgroupTuning.favorDynamicModifications(root);
        if (root) {
            if (config.slots() > SESSION_UID_OFFSET) {
                throw new IllegalArgumentException("at most " + SESSION_UID_OFFSET + " slots (session uids follow)");
            }
            this.lease = UidLease.acquire(UidLease.DIRECTORY, config.slotUidBase());
            this.uidBase = lease.base();
            if (!lease.skipped().isEmpty()) {
                LOG.log(System.Logger.Level.WARNING, "sandbox uids " + String.join(", ", lease.skipped())
                        + " are leased by another Crucible process on this host; this one uses " + uidBase + ".."
                        + (uidBase + UidLease.BLOCK - 1));
            }
        } else {
            this.lease = null;
            this.uidBase = -1;
        }
        this.spawner = new ProcessSpawner();
        this.freeSlots = new ArrayBlockingQueue<>(config.slots());
        for (int i = 0; i < config.slots(); i++) {
            freeSlots.add(i);
        }
        if (!root) {
            warnings.add("not running as root: every sandbox runs as this server's uid " + ownUid
                    + " (mapped to 1000 inside), so an escape lands on the server's own uid and the sandboxes share"
                    + " its process count; run as root to get a separate unprivileged uid per slot");
        }
        if (cgroups instanceof Cgroups.None none) {
            warnings.add("no writable cgroup (" + none.reason() + "): memory, pids and CPU are bounded by rlimits"
                    + " only (RLIMIT_AS, RLIMIT_NPROC, RLIMIT_CPU per process); memory_limit and cpu_ms are not"
                    + " measured and a fork bomb is bounded only by the wall clock");
        }
        for (String w : warnings) {
            LOG.log(System.Logger.Level.WARNING, w);
        }
    }

    /** Copies the crucible-launch binary for this architecture out of the JAR, or returns null when there is none. */
    private static Path extractHelper(Path workRoot) throws IOException {
        String arch = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> System.getProperty("os.arch");
        };
        try (InputStream in = BwrapSandbox.class.getResourceAsStream("crucible-launch-" + arch)) {
            if (in == null) {
                LOG.log(System.Logger.Level.INFO, "no crucible-launch for " + arch + " in this build; using sh + setpriv");
                return null;
            }
            Path target = workRoot.resolve("crucible-launch");
            Files.write(target, in.readAllBytes());
            Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwx------"));
            return target;
        }
    }

    static BwrapSandbox start(SandboxConfig config) {
        HostTools tools = HostTools.find();
        byte[] program;
        try {
            program = SeccompProgram.shared();
        } catch (IllegalStateException e) {
            throw new SandboxUnavailableException("libseccomp is missing or unusable (" + e.getMessage()
                    + "); install it: apt-get install libseccomp2", e);
        }
        try {
            BwrapSandbox sandbox = new BwrapSandbox(config, tools, program);
            if (config.selfTest()) {
                sandbox.selfTest();
            }
            return sandbox;
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot prepare a work directory in " + config.workParent() + ": "
                    + e.getMessage(), e);
        }
    }

    /** Runs {@code /bin/true} once so that a host which cannot build namespaces fails at start, with bwrap's words. */
    private void selfTest() {
        try {
            SandboxResult r = run(SandboxSpec.of(List.of("/usr/bin/true"), Limits.DEFAULT));
            if (r.verdict() != Verdict.OK) {
                String why = r.sandboxError() != null ? r.sandboxError()
                        : new String(r.stderr(), StandardCharsets.UTF_8).strip();
                close();
                throw new SandboxUnavailableException("the sandbox cannot start on this host: " + why
                        + " (user namespaces disabled? see README, 'Security model')");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxUnavailableException("interrupted during the sandbox self-test", e);
        }
    }

    @Override
    public Launch launch(SandboxSpec spec, boolean ahead) throws InterruptedException {
        int slot = freeSlots.take();
        String name = groupPrefix + HexFormat.of().formatHex(randomBytes());
        int uid = root ? uidBase + slot : -1;
        Cgroups.RunGroup group = null;
        boolean chowned = false;
        boolean started = false;
        try {
            if (!(cgroups instanceof Cgroups.None)) {
                group = prepared.remove(slot);
                if (group == null) {
                    group = cgroups.prepare(name);
                }
                group.limit(spec.limits());
                if (ahead) {
                    group.background(true);
                }
            }
            if (spec.buildDir() != null && spec.buildWritable() && root) {
                Files.setAttribute(spec.buildDir(), "unix:uid", uid);
                chowned = true;
            }
            ensureEtcMountPoints(spec);
            List<Path> procs = group == null ? List.of() : group.procsFiles();
            List<String> argv = helper != null
                    ? LaunchCommand.viaHelper(config, workRoot, helper, seccomp, bwrap, uid, procs, group == null, spec)
                    : LaunchCommand.viaShell(config, workRoot, seccomp, bwrap, setpriv, uid, procs, group == null, spec);
            Process process = spawner.start(argv);
            started = true;
            live.add(process);
            Runnable release = releaser(slot, group, chowned ? spec.buildDir() : null);
            return new Launched(process, group, ahead, spec.limits().outputBytes(), () -> {
                live.remove(process);
                release.run();
            });
        } catch (IOException e) {
            return new Failed("cannot start the sandbox: " + e.getMessage());
        } finally {
            if (!started) {
                releaser(slot, group, chowned ? spec.buildDir() : null).run();
            }
        }
    }

    /** Session uids start this far above the slot uids. */
    static final int SESSION_UID_OFFSET = 1000;

    @Override
    public int sessionUid(int number) {
        return root ? uidBase + SESSION_UID_OFFSET + number : -1;
    }

    @Override
    public Interactive open(SandboxSpec spec, int number, double cpus, Path log) throws IOException, InterruptedException {
        if (spec.workspace() == null) {
            throw new IllegalArgumentException("a long-lived sandbox needs a workspace directory");
        }
        int uid = sessionUid(number);
        if (uid >= 0) {
            Files.setAttribute(spec.workspace(), "unix:uid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(spec.workspace(), "unix:gid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        }
        Files.setPosixFilePermissions(spec.workspace(), PosixFilePermissions.fromString("rwx------"));
        Cgroups.RunGroup group = null;
        boolean started = false;
        try {
            if (!(cgroups instanceof Cgroups.None)) {
                group = cgroups.create(groupPrefix + "s" + HexFormat.of().formatHex(randomBytes()), spec.limits());
                group.cpuQuota(cpus);
            }
            ensureEtcMountPoints(spec);
            List<Path> procs = group == null ? List.of() : group.procsFiles();
            List<String> argv = helper != null
                    ? LaunchCommand.viaHelper(config, workRoot, helper, seccomp, bwrap, uid, procs, group == null, spec)
                    : LaunchCommand.viaShell(config, workRoot, seccomp, bwrap, setpriv, uid, procs, group == null, spec);
            Process process = spawner.start(argv, log);
            started = true;
            live.add(process);
            Cgroups.RunGroup own = group;
            return new Resident(process, group, () -> {
                live.remove(process);
                if (own != null) {
                    Launched.PIPES.execute(() -> teardown(own));
                }
            });
        } finally {
            if (!started && group != null) {
                group.destroy();
            }
        }
    }

    /** The answer does not wait for the cgroup to empty and go; the slot does. */
    private Runnable releaser(int slot, Cgroups.RunGroup group, Path buildDir) {
        AtomicBoolean once = new AtomicBoolean();
        return () -> {
            if (once.compareAndSet(false, true)) {
                Launched.PIPES.execute(() -> release(slot, group, buildDir)); // cgroup file I/O: a platform thread
            }
        };
    }

    /** A launch that failed before a process existed. */
    private record Failed(String why) implements Launch {
        @Override
        public SandboxResult complete(byte[] stdin, Limits limits, OutputListener listener) {
            return failure(why);
        }

        @Override
        public boolean alive() {
            return false;
        }

        @Override
        public void abandon() {
            // nothing was started
        }
    }

    private void release(int slot, Cgroups.RunGroup group, Path buildDir) {
        try {
            if (group != null) {
                teardown(group);
            }
            if (!(cgroups instanceof Cgroups.None) && !closing) {
                try {
                    prepared.put(slot, cgroups.prepare(groupPrefix + HexFormat.of().formatHex(randomBytes())));
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, "cannot prepare the next run's cgroups", e);
                }
            }
            if (buildDir != null) {
                try {
                    Files.setAttribute(buildDir, "unix:uid", ownUid);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, "cannot take back " + buildDir, e);
                }
            }
        } finally {
            freeSlots.add(slot);
        }
    }

    @Override
    public boolean awaitIdle(java.time.Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (freeSlots.size() < config.slots()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(2);
        }
        return true;
    }

    /** Names of cgroups need to be unique, not secret. */
    private static byte[] randomBytes() {
        byte[] b = new byte[8];
        java.util.concurrent.ThreadLocalRandom.current().nextBytes(b);
        return b;
    }

    /** The pid namespace dies with the outer bwrap; the cgroup sweep is the second net (A7). */
    private static void awaitEmpty(Cgroups.RunGroup group) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
        long pause = 1;
        while (!group.pids().isEmpty()) {
            if (System.nanoTime() > deadline) {
                LOG.log(System.Logger.Level.WARNING, "sandbox processes outlived the teardown deadline; killing");
                group.killAll();
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
            }
            Thread.sleep(pause);
            pause = Math.min(pause * 2, 20);
            if (pause >= 8) {
                group.killAll(); // the program has exited: whatever is left of the run is a leftover
            }
        }
    }

    private static void teardown(Cgroups.RunGroup group) {
        try {
            awaitEmpty(group);
        } catch (InterruptedException e) {
            group.killAll();
            Thread.currentThread().interrupt();
        }
        group.destroy();
    }

    static SandboxResult failure(String why) {
        return new SandboxResult(-1, null, new byte[0], new byte[0], false, false, 0, -1, -1, false, false, false, why);
    }

    /**
     * The sandbox's whole {@code /etc}, bound read-only in one mount: synthetic passwd, group and hosts, a copy of
     * the host's ld.so.cache and a mirror of its /etc/alternatives links (which point into /usr). One bind instead of
     * five saves about a millisecond a run. The copies are taken at start-up.
     */
    private static void writeEtc(Path etc) throws IOException {
        Files.createDirectories(etc);
        Files.writeString(etc.resolve("passwd"), "root:x:0:0:root:/root:/bin/false\n"
                + "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n");
        Files.writeString(etc.resolve("group"), "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n");
        Files.writeString(etc.resolve("hosts"), "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n");
        Path cache = Path.of("/etc/ld.so.cache");
        if (Files.isRegularFile(cache)) {
            Files.copy(cache, etc.resolve("ld.so.cache"));
        }
        Path alternatives = Path.of("/etc/alternatives");
        if (Files.isDirectory(alternatives)) {
            Path mirror = Files.createDirectory(etc.resolve("alternatives"));
            try (var links = Files.list(alternatives)) {
                for (Path link : links.filter(Files::isSymbolicLink).toList()) {
                    Files.createSymbolicLink(mirror.resolve(link.getFileName()), Files.readSymbolicLink(link));
                }
            }
        }
        try (var walk = Files.walk(etc)) {
            for (Path p : walk.filter(p -> !Files.isSymbolicLink(p)).toList()) {
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(
                        Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
            }
        }
    }

    /** A bind below /etc needs its mount point in the read-only /etc; create the empty directory or file once. */
    private void ensureEtcMountPoints(SandboxSpec spec) throws IOException {
        if (spec.rootfs() != null) {
            return;
        }
        for (String path : spec.readOnlyBindsIfPresent()) {
            boolean directory = Files.isDirectory(Path.of(path));
            if (path.startsWith("/etc/") && (directory || Files.isRegularFile(Path.of(path)))) {
                Path point = workRoot.resolve("etc").resolve(path.substring("/etc/".length())).normalize();
                if (point.startsWith(workRoot.resolve("etc")) && !Files.exists(point)) {
                    if (directory) {
                        Files.createDirectories(point);
                    } else {
                        Files.createDirectories(point.getParent());
                        Files.createFile(point);
                    }
                    Files.setPosixFilePermissions(point, PosixFilePermissions.fromString(directory ? "rwxr-xr-x" : "rw-r--r--"));
                }
            }
        }
    }

    @Override
    public List<String> describe() {
        return List.of(
                "launcher: " + bwrap + " via " + (helper != null ? "crucible-launch" : "sh + setpriv")
                        + (root ? ", slot uids " + uidBase + ".." + (uidBase + config.slots() - 1) + ", session uids "
                        + (uidBase + SESSION_UID_OFFSET) + ".. (leased host-wide in " + UidLease.DIRECTORY + ")"
                        : " as uid " + ownUid),
                "cgroups: " + cgroups.describe() + "; " + tuning,
                "seccomp: " + seccompInstructions + " BPF instructions (libseccomp), AF_UNIX only, architecture checked",
                "slots: " + config.slots());
    }

    @Override
    public List<String> warnings() {
        return List.copyOf(warnings);
    }

    @Override
    public void killRunning() {
        live.forEach(Process::destroyForcibly);
    }

    @Override
    public boolean limitsAdjustable() {
        return !(cgroups instanceof Cgroups.None);
    }

    @Override
    public int liveRunGroups() {
        return cgroups.liveGroups(groupPrefix) - prepared.size();
    }

    @Override
    public Path workRoot() {
        return workRoot;
    }

    @Override
    public int uidBase() {
        return uidBase;
    }

    @Override
    public int sharedUid() {
        return root ? -1 : ownUid;
    }

    @Override
    public void close() {
        try {
            closing = true;
            awaitIdle(java.time.Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        prepared.values().forEach(Cgroups.RunGroup::destroy);
        prepared.clear();
        spawner.close();
        try (var walk = Files.walk(workRoot)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot remove " + workRoot, e);
        }
        if (lease != null) {
            lease.close();
        }
    }
}
