package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.uid.UidLayout;
import dev.crucible.util.Once;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import tools.jackson.databind.node.ObjectNode;

/**
 * The gVisor tier's launch (issue 29): the same chain as the namespace tier's up to its last step (crucible-launch joins
 * the run's cgroups, sets the rlimits that bound runsc as a whole, becomes the slot's unprivileged uid, sets
 * no_new_privs and the parent-death signal, leaves the server's session, clears the environment), whose last exec is
 * {@code runsc --network=none run} of a bundle made from the namespace tier's own bubblewrap options ({@link OciBundle}):
 * the program's system calls reach gVisor's Sentry, never the host kernel. Each slot uid has its own bundle and state
 * directory under {@code <work>/gvisor/<uid>}, rewritten and emptied at every launch (a slot runs one sandbox at a time;
 * a killed run leaves state that the next launch clears).
 *
 * <p>runsc runs as root of a user namespace crucible-launch makes (steps 7 and 10): {@code 0} is the slot's uid, so runsc
 * and its gofer own what the slot owns; {@code 65534}, as which runsc runs its Sentry, is a host uid of the slot's own
 * that owns nothing ({@link #sentryUid}). So a Sentry broken into is neither the slot's files' owner nor any other
 * sandbox's, and {@code runsc restore}, which Debian's build refuses in its rootless mode, works: a sandbox can be
 * saved whole ({@link #checkpointArgv}) and started again from what was saved ({@link #restoreArgv}). runsc's control
 * socket (an abstract one) lives in a network namespace of that user namespace's own, reachable only by a launcher that
 * joins it as the slot's uid.
 *
 * <p>Found like bubblewrap (an absolute path, never through PATH), its version and platform probed once and a real
 * sandbox started once ({@link #unavailable}) before the tier is offered: a host where runsc cannot run gets a reason,
 * not a failed run per request.
 */
public final class Gvisor {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");

    private final Path runsc;
    private final String platform;
    private final Path dir;
    private final Once<String> version;
    private final Once<String> unavailable;

    /**
     * @param runsc the runsc binary, or null to look for the Debian package's ({@code /usr/bin/runsc}) and others
     * @param platform runsc's {@code --platform} ({@code ptrace}, {@code systrap}, {@code kvm}), or null for its default
     * @param workRoot the sandbox's work directory, where {@code gvisor/} is made
     */
    public Gvisor(Path runsc, String platform, Path workRoot) {
        this.runsc = runsc != null ? runsc : HostTools.firstExecutable("runsc");
        this.platform = platform == null || platform.isBlank() ? null : platform.strip();
        this.dir = workRoot.resolve("gvisor");
        this.version = new Once<>(this::probeVersion);
        this.unavailable = new Once<>(this::selfTest);
    }

    /** The runsc binary, or null when none was found. */
    public Path runsc() {
        return runsc;
    }

    /** runsc's platform as configured, or {@code "default"}. */
    public String platform() {
        return platform == null ? "default" : platform;
    }

    /** runsc's version line ({@code runsc version 0.0~20221219.0}), or null when it has none to give. */
    public String version() {
        String v = version.get();
        return v.isEmpty() ? null : v;
    }

    /**
     * Why the tier cannot run here, as a sentence that says how to fix it, or null when it can: runsc missing, or a
     * real sandbox (runsc's own {@code true} of a bundle of this host's {@code /usr}) failed. Asked once.
     */
    public String unavailable() {
        String why = unavailable.get();
        return why.isEmpty() ? null : why;
    }

    private String probeVersion() {
        if (runsc == null || !Files.isExecutable(runsc)) {
            return "";
        }
        Run r = run(List.of(runsc.toString(), "--version"), 10);
        return r.exit() == 0 ? r.output().lines().findFirst().orElse("").strip() : "";
    }

    private String selfTest() throws IOException {
        if (runsc == null || !Files.isExecutable(runsc)) {
            return "gVisor's runsc is not installed; install it (apt-get install runsc) or name one with --runsc PATH";
        }
        if (version() == null) {
            return runsc + " --version failed: is it gVisor's runsc?";
        }
        if (HostTools.currentUid() != 0) {
            return "the gVisor tier needs the server to run as root (each sandbox runs as its slot's own uid, with a"
                    + " /workspace the launcher mounts)";
        }
        Path test = Files.createDirectories(dir.resolve("self-test"));
        Files.writeString(test.resolve("config.json"), OciBundle.text(OciBundle.config(List.of("bwrap", "--ro-bind",
                "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", "--symlink", "usr/bin", "/bin"), List.of(
                "/usr/bin/true"), skeleton(false), List.of())));
        List<String> argv = new ArrayList<>(runscFlags(test.resolve("state"), true));
        argv.addAll(List.of("run", "--bundle", test.toString(), "self-test"));
        Run r = run(argv, 60);
        deleteTree(test);
        if (r.exit() != 0) {
            return "gVisor's runsc (" + version() + ", platform " + platform() + ") cannot start a sandbox here: "
                    + r.output().strip().lines().reduce((a, b) -> b).orElse("exit " + r.exit())
                    + (platform == null ? "" : "; try another --runsc-platform");
        }
        LOG.log(System.Logger.Level.INFO, "gVisor tier available: " + version() + ", platform " + platform());
        return "";
    }

    /** runsc's global flags for the self-test (as the server's root, so rootless), else in a slot's namespace. */
    private List<String> runscFlags(Path state, boolean rootless) {
        List<String> flags = new ArrayList<>(List.of(runsc.toString(), rootless ? "--rootless" : "--ignore-cgroups",
                "--network=none", "--root=" + state));
        if (platform != null) {
            flags.add("--platform=" + platform);
        }
        String debug = System.getenv("CRUCIBLE_RUNSC_DEBUG_DIR"); // runsc's own logs, for an operator chasing a failure
        if (debug != null && !debug.isBlank()) {
            flags.addAll(List.of("--debug", "--debug-log=" + debug.strip() + "/"));
        }
        return flags;
    }

    /** The container's name in its slot's state directory: one at a time there. */
    static final String CONTAINER = "sandbox";

    /**
     * The host uid that runsc's Sentry runs as for slot or session uid {@code uid}: one of the block of host uids
     * {@code uid} has for a root of its own ({@link LaunchCommand#ROOT_UID_BASE}), the one such a root never maps
     * (its user 1000 is the session's uid), so it owns no file anywhere; -1 past the largest uid.
     */
    public static long sentryUid(int uid) {
        long block = UidLayout.rootUid(uid);
        return block < 0 ? -1 : block + 1000;
    }

    /**
     * The argv of one gVisor sandbox of {@code spec} as host uid {@code uid} in {@code group}: crucible-launch's steps,
     * then runsc. The bundle is written now, from {@code c}'s bubblewrap options for the same spec. A session's sandbox
     * (a workspace of its own, bound as it is) runs its interpreter alone: no supervisor, so no commands or ports.
     *
     * @throws IOException when the bundle cannot be written, or the spec asks for what this tier does not give
     */
    public List<String> argv(LaunchCommand c, int uid, Cgroups.RunGroup group, SandboxSpec spec) throws IOException {
        return launch(c, uid, group, spec, List.of("run"));
    }

    /**
     * The argv of a gVisor sandbox of {@code spec} started again from what {@link #checkpointArgv} saved in {@code
     * image}: its memory, processes and open files as they were, its files (the gofer's, on the host) as they are now.
     * The spec must bind what the saved sandbox's bound (the same session's); its stdin and stdout are the new ones.
     *
     * @throws IOException as {@link #argv} does, or when {@code image} holds no saved sandbox
     */
    public List<String> restoreArgv(LaunchCommand c, int uid, Cgroups.RunGroup group, SandboxSpec spec, Path image)
            throws IOException {
        if (!Files.isRegularFile(image.resolve("checkpoint.img"), LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("no saved sandbox in " + image);
        }
        return launch(c, uid, group, spec, List.of("restore", "--image-path=" + image));
    }

    /**
     * The argv that saves the running gVisor sandbox of slot or session uid {@code uid}, started as process {@code pid}
     * (runsc itself, a child of this server) by {@link #argv} or {@link #restoreArgv}, into {@code image}: crucible-launch
     * becomes {@code uid}, joins that sandbox's user and network namespaces (step 11), and runs {@code runsc checkpoint}.
     * The sandbox then ends ({@code --leave-running} of this runsc restores it inside the checkpointing process, whose
     * stdio are not the sandbox's: not used). {@code image} is made now, empty, the uid's alone.
     *
     * @throws IOException when {@code image} exists already or cannot be made
     */
    public List<String> checkpointArgv(LaunchCommand c, int uid, long pid, Path image) throws IOException {
        Files.createDirectories(image.getParent());
        Files.createDirectory(image, PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Files.setAttribute(image, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        List<String> argv = joined(c, uid, pid);
        argv.addAll(List.of("checkpoint", "--image-path=" + image, CONTAINER));
        return argv;
    }

    /** What the server does to a running gVisor sandbox of uid {@code uid}: save it whole, signal its program. */
    public GvisorControl control(ProcessSpawner spawner, LaunchCommand c, int uid) {
        return new GvisorControl(this, spawner, c, uid, dir);
    }

    /** The directory of slot or session uid {@code uid}'s bundle, state and workspace mount point. */
    private Path own(int uid) {
        return dir.resolve(Integer.toString(uid));
    }

    /**
     * crucible-launch as {@code uid} joining the namespaces of runsc's process {@code pid} (step 11), then runsc's
     * flags for that uid's state: the start of every control command's argv.
     */
    List<String> joined(LaunchCommand c, int uid, long pid) {
        List<String> argv = c.viaHelper(List.of(), List.of(), uid, c.seccompProgram(false), null);
        argv.addAll(argv.size() - 1, List.of("--join", Long.toString(pid)));
        argv.addAll(runscFlags(own(uid).resolve("state"), false));
        return argv;
    }

    private List<String> launch(LaunchCommand c, int uid, Cgroups.RunGroup group, SandboxSpec spec, List<String> how)
            throws IOException {
        String why = unavailable();
        if (why != null) {
            throw new IOException(why);
        }
        if (spec.egress() != null) {
            throw new IOException("egress is not available under gVisor yet; run with isolation \"namespaces\"");
        }
        if (!(spec.root() instanceof SandboxRoot.Host || spec.root() instanceof SandboxRoot.Usr
                || spec.root() instanceof SandboxRoot.Image)) {
            throw new IOException("a writable root is not available under gVisor");
        }
        long sentry = sentryUid(uid);
        if (!c.viaHelper() || sentry < 0) { // the self-test refuses a server that is not root: a slot has its uid
            throw new IOException("the gVisor tier needs crucible-launch and a uid of the sandbox's own");
        }
        Path own = own(uid);
        Path state = own.resolve("state");
        deleteTree(state); // a killed run's, if any: this slot runs one sandbox at a time
        Files.createDirectories(state);
        Files.setAttribute(state, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rwx------"));
        List<LaunchCommand.Rlimit> rlimits = c.rlimits(uid, false, spec);
        // the program's, kept by the Sentry; not RLIMIT_NPROC, which runsc also sets on its own host process (whose
        // Go runtime then cannot start its threads): the pids cgroup bounds tasks, with the Sentry's share added
        List<LaunchCommand.Rlimit> inside = rlimits.stream()
                .filter(r -> !r.name().equals("cpu") && !r.name().equals("nproc")).toList();
        // runsc as a whole: its Go runtime reserves address space and threads, and the Sentry keeps the program's
        // memory in one file (so no as, nproc, nofile or fsize bound on it); the cgroups bound its memory and pids,
        // RLIMIT_CPU its CPU time (the program's included)
        List<LaunchCommand.Rlimit> outside = rlimits.stream()
                .filter(r -> r.name().equals("cpu") || r.name().equals("core")).toList();
        List<String> bwrap = new ArrayList<>(c.bwrapArguments(spec, false));
        List<String> launcherSteps = new ArrayList<>(List.of("--userns-map", "0 " + uid + " 1,65534 " + sentry + " 1",
                "--own-netns"));
        if (spec.workspace() == null) { // else a session's own, bound as it is
            launcherSteps.addAll(freshWorkspace(bwrap, Files.createDirectories(own.resolve("workspace"))));
        }
        var config = OciBundle.config(bwrap, spec.command(), skeleton(spec.buildDir() != null), inside);
        // runsc maps only the slot's uid, as 0: the program is that uid 0 of gVisor's kernel, without a capability, so
        // that the files it makes (the gofer's, the slot uid's on the host) are its own inside
        ((ObjectNode) config.get("process").get("user")).put("uid", 0).put("gid", 0);
        Files.writeString(own.resolve("config.json"), OciBundle.text(config));
        List<String> argv = c.viaHelper(group == null ? List.of() : group.procsFiles(), outside, uid,
                c.seccompProgram(false), null);
        argv.addAll(argv.size() - 1, launcherSteps);
        argv.addAll(runscFlags(state, false));
        argv.addAll(how);
        argv.addAll(List.of("--bundle", own.toString(), CONTAINER));
        return argv;
    }

    /**
     * gVisor binds no host file into a tmpfs of its own: bubblewrap's fresh {@code /workspace} tmpfs becomes a bind of
     * {@code workspace}, where crucible-launch mounts a tmpfs of the same size (step 9), and each file bound under
     * {@code /workspace} a copy made there. Rewrites {@code bwrap}; returns crucible-launch's options for it.
     */
    private static List<String> freshWorkspace(List<String> bwrap, Path workspace) throws IOException {
        int tmpfs = bwrap.indexOf("/workspace");
        if (tmpfs < 3 || !bwrap.get(tmpfs - 1).equals("--tmpfs") || !bwrap.get(tmpfs - 3).equals("--size")) {
            throw new IOException("a gVisor sandbox needs a fresh /workspace or a session's");
        }
        List<String> steps = new ArrayList<>(List.of("--workspace-tmpfs", workspace.toString(), "--workspace-size",
                bwrap.get(tmpfs - 2)));
        bwrap.subList(tmpfs - 3, tmpfs + 1).clear();
        bwrap.addAll(tmpfs - 3, List.of("--bind", workspace.toString(), "/workspace"));
        for (int i = 0; i + 2 < bwrap.size(); i++) {
            if (bwrap.get(i).equals("--ro-bind") && bwrap.get(i + 2).startsWith("/workspace/")) {
                steps.addAll(List.of("--copy-in", bwrap.get(i + 1), bwrap.get(i + 2).substring("/workspace/".length())));
                bwrap.subList(i, i + 3).clear();
                i--;
            }
        }
        return steps;
    }

    /**
     * Whether {@code pid} is gVisor's kernel (the Sentry) of the sandbox whose runsc is {@code runsc}: runsc's child
     * named {@code runsc-sandbox}, which lives as long as the sandbox does. Not the gofer, not the Sentry's own
     * stubs, not the launcher's passing helpers (a warm sandbox whose passing helper was taken for its agent would
     * seem to have ended once that helper did).
     */
    public static boolean isSentry(long pid, long runsc) {
        try {
            byte[] cmdline = Files.readAllBytes(Path.of("/proc/" + pid + "/cmdline"));
            int end = 0;
            while (end < cmdline.length && cmdline[end] != 0) {
                end++;
            }
            return new String(cmdline, 0, end, StandardCharsets.UTF_8).equals("runsc-sandbox") && ProcessHandle.of(pid)
                    .flatMap(ProcessHandle::parent).map(ProcessHandle::pid).orElse(-1L) == runsc;
        } catch (IOException e) {
            return false; // gone
        }
    }

    /** The run cgroup's limits for a run's own: {@link #onHost} behind gVisor, the same behind namespaces. */
    public static UnaryOperator<Limits> hostLimits(SandboxSpec spec) {
        return spec.isolation() == Isolation.GVISOR ? Gvisor::onHost : limits -> limits;
    }

    /** What gVisor's own kernel takes beside the program: its Sentry, gofer and their Go runtimes. */
    static final int SENTRY_MEMORY_MB = 128;

    /** The host threads of runsc's own processes (Go runtimes of the Sentry, gofer and runsc), beside the program's. */
    static final int SENTRY_PIDS = 256;

    /**
     * The run's cgroup limits for a program's {@code limits} behind gVisor: the program's own, plus what its kernel
     * takes ({@link #SENTRY_MEMORY_MB}, {@link #SENTRY_PIDS}); the program's memory is counted in the Sentry's.
     */
    public static Limits onHost(Limits limits) {
        return new Limits(limits.timeoutMs(), limits.cpuMs(), limits.memoryMb() + SENTRY_MEMORY_MB,
                limits.outputBytes(), limits.pids() + SENTRY_PIDS);
    }

    /**
     * The root of a sandbox on the host's {@code /usr}: mount points and the usr-merge links, nothing else ({@code /build}
     * only for a sandbox that binds one: gVisor binds a host directory only onto a mount point the root has).
     */
    private Path skeleton(boolean build) throws IOException {
        Path root = dir.resolve(build ? "rootfs-build" : "rootfs");
        if (Files.isDirectory(root.resolve("workspace"))) {
            return root;
        }
        Files.createDirectories(root);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        for (String d : build ? List.of("usr", "etc", "tmp", "workspace", "proc", "dev", "build")
                : List.of("usr", "etc", "tmp", "workspace", "proc", "dev")) {
            Files.createDirectories(root.resolve(d));
        }
        for (String link : List.of("bin", "lib", "sbin", "lib64")) {
            if (!Files.exists(root.resolve(link), LinkOption.NOFOLLOW_LINKS)) {
                Files.createSymbolicLink(root.resolve(link), Path.of("usr", link));
            }
        }
        return root;
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (var walk = Files.walk(p)) {
            for (Path q : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }

    private record Run(int exit, String output) {}

    private static Run run(List<String> argv, int seconds) {
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readNBytes(64 * 1024);
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Run(-1, argv.getFirst() + " did not answer in " + seconds + " s");
            }
            return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            return new Run(-1, "cannot run " + argv.getFirst() + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Run(-1, "interrupted");
        }
    }
}
