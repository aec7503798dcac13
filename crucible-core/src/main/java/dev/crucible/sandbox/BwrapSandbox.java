package dev.crucible.sandbox;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
    private static final long POLL_MS = 10;
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
    /** Names of this instance's run groups start with it: {@code run-<pid>-<instance tag>}. */
    private final String groupPrefix = "run-" + ProcessHandle.current().pid() + "-" + Integer.toHexString(
            java.util.concurrent.ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
    private final List<String> warnings = new ArrayList<>();

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
            program = SeccompProgram.build();
        } catch (IllegalStateException e) {
            throw new SandboxUnavailableException("libseccomp is missing or unusable (" + e.getMessage()
                    + "); install it: apt-get install libseccomp2", e);
        }
        try {
            BwrapSandbox sandbox = new BwrapSandbox(config, tools, program);
            sandbox.selfTest();
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
    public SandboxResult run(SandboxSpec spec) throws InterruptedException {
        int slot = freeSlots.take();
        String name = groupPrefix + HexFormat.of().formatHex(randomBytes());
        int uid = root ? config.slotUidBase() + slot : -1;
        Cgroups.RunGroup group = null;
        boolean chowned = false;
        try {
            if (!(cgroups instanceof Cgroups.None)) {
                group = prepared.remove(slot);
                if (group == null) {
                    group = cgroups.prepare(name);
                }
                group.limit(spec.limits());
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
            return supervise(spec, argv, group);
        } catch (IOException e) {
            return failure("cannot start the sandbox: " + e.getMessage());
        } finally {
            // the answer does not wait for the cgroup to empty and go; the slot does
            Cgroups.RunGroup finished = group;
            Path giveBack = chowned ? spec.buildDir() : null;
            Thread.ofVirtual().start(() -> release(slot, finished, giveBack));
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

    /** Spawns the command, feeds stdin, reads both streams, enforces the wall and CPU limits. */
    private SandboxResult supervise(SandboxSpec spec, List<String> argv, Cgroups.RunGroup group)
            throws IOException, InterruptedException {
        Limits limits = spec.limits();
        long start = System.nanoTime();
        Process process = spawner.start(argv);
        AtomicBoolean outputExceeded = new AtomicBoolean();
        Runnable kill = () -> {
            outputExceeded.set(true);
            process.destroyForcibly();
        };
        Output stdout = new Output(limits.outputBytes(), kill);
        Output stderr = new Output(limits.outputBytes(), kill);
        Thread in = Thread.ofVirtual().start(() -> feed(process.getOutputStream(), spec.stdin()));
        Thread out = Thread.ofVirtual().start(() -> stdout.drain(process.getInputStream()));
        Thread err = Thread.ofVirtual().start(() -> stderr.drain(process.getErrorStream()));

        boolean timedOut = false;
        boolean cpuExceeded = false;
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(limits.timeoutMs());
        long cpuBudget = TimeUnit.MILLISECONDS.toNanos(limits.cpuMs());
        try {
            while (!process.waitFor(Math.min(POLL_MS, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)),
                    TimeUnit.MILLISECONDS)) {
                if (System.nanoTime() >= deadline) {
                    timedOut = true;
                    process.destroyForcibly();
                } else if (group != null && group.cpuNanos() > cpuBudget) {
                    cpuExceeded = true;
                    process.destroyForcibly();
                }
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            throw e;
        }
        long wallMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        joinOrClose(process, in, out, err);
        int exit = process.exitValue();
        long cpuNanos = group == null ? -1 : group.cpuNanos();
        if (!cpuExceeded && group != null && cpuNanos > cpuBudget && exit != 0) {
            cpuExceeded = true; // killed by RLIMIT_CPU or ran past the budget between two polls
        }
        String sandboxError = setupError(exit, stderr);
        Integer signal = exit > 128 && exit < 128 + 65 ? exit - 128 : null;
        return new SandboxResult(exit, signal, stdout.bytes(), stderr.bytes(), stdout.truncated(), stderr.truncated(),
                wallMs, cpuNanos < 0 ? -1 : cpuNanos / 1_000_000, group == null ? -1 : group.memoryPeakBytes(),
                timedOut, cpuExceeded && !timedOut, group != null && group.oomKills() > 0, sandboxError);
    }

    /**
     * crucible-launch (exit 125), bwrap and setpriv (exit 1) say what went wrong on stderr before the program starts.
     * A program could print the same words; it then only misleads itself.
     */
    private static String setupError(int exit, Output stderr) {
        if (exit != 1 && exit != 127 && exit != LaunchCommand.JOIN_FAILED) {
            return null;
        }
        String text = new String(stderr.bytes(), StandardCharsets.UTF_8);
        for (String tool : List.of("bwrap: ", "setpriv: ", "crucible-launch: ")) {
            if (text.startsWith(tool)) {
                return text.lines().findFirst().orElse(text).strip();
            }
        }
        return null;
    }

    private static void feed(OutputStream stdin, byte[] input) {
        try (stdin) {
            stdin.write(input);
        } catch (IOException e) {
            // the program exited or closed its stdin; what it did not read is dropped
        }
    }

    /** Waits for the readers; if something still holds a pipe past the deadline, closes our ends. */
    private static void joinOrClose(Process process, Thread... threads) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !t.join(java.time.Duration.ofNanos(Math.max(1, left)))) {
                closeQuietly(process.getInputStream());
                closeQuietly(process.getErrorStream());
                t.join(java.time.Duration.ofMillis(TEARDOWN_MS));
            }
        }
    }

    private static void closeQuietly(InputStream in) {
        try {
            in.close();
        } catch (IOException e) {
            // nothing to do
        }
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

    private static SandboxResult failure(String why) {
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

    /** A bind below /etc needs its mount point in the read-only /etc; create the empty directory once. */
    private void ensureEtcMountPoints(SandboxSpec spec) throws IOException {
        if (spec.rootfs() != null) {
            return;
        }
        for (String path : spec.readOnlyBindsIfPresent()) {
            if (path.startsWith("/etc/") && Files.isDirectory(Path.of(path))) {
                Path point = workRoot.resolve("etc").resolve(path.substring("/etc/".length())).normalize();
                if (point.startsWith(workRoot.resolve("etc")) && !Files.isDirectory(point)) {
                    Files.createDirectories(point);
                    Files.setPosixFilePermissions(point, PosixFilePermissions.fromString("rwxr-xr-x"));
                }
            }
        }
    }

    @Override
    public List<String> describe() {
        return List.of(
                "launcher: " + bwrap + " via " + (helper != null ? "crucible-launch" : "sh + setpriv")
                        + (root ? ", slot uids " + config.slotUidBase() + ".."
                        + (config.slotUidBase() + config.slots() - 1) : " as uid " + ownUid),
                "cgroups: " + cgroups.describe() + "; " + tuning,
                "seccomp: " + seccompInstructions + " BPF instructions (libseccomp), AF_UNIX only, architecture checked",
                "slots: " + config.slots());
    }

    @Override
    public List<String> warnings() {
        return List.copyOf(warnings);
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
    }
}
