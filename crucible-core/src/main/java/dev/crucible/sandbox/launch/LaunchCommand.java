package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.uid.UidLayout;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The one argv builder of every sandbox, one-shot runs and sessions alike (see docs/sandbox-recipe.md, The launch
 * chain): a launcher joins the run's cgroups before anything else runs, sets the rlimits, opens the seccomp program
 * as fd 3 and drops every variable; then, when we are root, becomes the slot's unprivileged uid; then {@code bwrap}
 * builds the sandbox and execs the program. The launcher is {@code crucible-launch} (one static exec) when this
 * build has it, else {@code sh} followed by {@code setpriv}; both get the same rlimits and the same bwrap argv.
 * Immutable. Public for the launcher and the zygotes, which start every sandbox from its argv.
 */
public final class LaunchCommand {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");

    /**
     * Exit code of the launcher when a privileged step fails; with a {@code crucible-launch: } line on stderr,
     * the run's supervisor reports a sandbox error.
     */
    public static final int JOIN_FAILED = 125;

    private final SandboxConfig config;
    private final Path etc;
    private final Path seccomp;
    private final Supplier<Path> seccompInet;
    private final Path bwrap;
    private final Path nsenter;
    private final Path setpriv;
    private final Path helper;
    private final Path supervisor;
    private final Gvisor gvisor;

    /**
     * @param etc the synthetic /etc directory
     * @param seccomp the seccomp program's file, opened as fd 3 by the launcher
     * @param seccompInet the program of a sandbox with egress (AF_INET and AF_INET6 sockets too), written when first
     *     asked for
     * @param helper the extracted crucible-launch binary, or null to launch through sh and setpriv
     * @param supervisor the extracted crucible-supervisor binary (world-readable), or null: sessions run no commands
     */
    public LaunchCommand(SandboxConfig config, Path etc, Path seccomp, Supplier<Path> seccompInet,
            HostTools tools, Path helper, Path supervisor) {
        this.config = config;
        this.etc = etc;
        this.seccomp = seccomp;
        this.seccompInet = seccompInet;
        this.bwrap = tools.bwrap();
        this.nsenter = HostTools.firstExecutable("nsenter");
        this.setpriv = tools.setpriv();
        this.helper = helper;
        this.supervisor = helper == null ? null : supervisor; // its control socket is connected by crucible-launch
        this.gvisor = new Gvisor(config.runsc(), config.runscPlatform(), etc.getParent());
    }

    /** The gVisor tier's launch: the same chain, runsc as its last step. */
    public Gvisor gvisor() {
        return gvisor;
    }

    /** Copies the crucible-launch binary for this architecture out of the JAR, or returns null when there is none. */
    public static Path extractHelper(Path workRoot) throws IOException {
        return extract(workRoot, "crucible-launch", "rwx------", "using sh + setpriv");
    }

    private static Path extract(Path workRoot, String name, String mode, String without) throws IOException {
        byte[] binary = builtBinary(name);
        if (binary == null) {
            LOG.log(System.Logger.Level.INFO, "no " + name + " for " + ARCH + " in this build; " + without);
            return null;
        }
        Path target = workRoot.resolve(name);
        Files.write(target, binary);
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString(mode));
        return target;
    }

    /** This machine's architecture as scripts/build-launch.sh names it. */
    private static final String ARCH = switch (System.getProperty("os.arch")) {
        case "amd64", "x86_64" -> "x86_64";
        case "aarch64", "arm64" -> "aarch64";
        default -> System.getProperty("os.arch");
    };

    /**
     * A binary scripts/build-launch.sh built into the JAR for this architecture ({@code crucible-launch},
     * {@code crucible-init}), or null when this build has none. They lie next to this class (crucible-core/pom.xml
     * builds them into this package's directory).
     */
    public static byte[] builtBinary(String name) throws IOException {
        try (InputStream in = LaunchCommand.class.getResourceAsStream(name + "-" + ARCH)) {
            return in == null ? null : in.readAllBytes();
        }
    }

    /**
     * Copies crucible-supervisor out of the JAR into {@code workRoot} (readable by every sandbox uid: bwrap binds it
     * in as that uid), or returns null when this build has none.
     */
    public static Path extractSupervisor(Path workRoot) throws IOException {
        return extract(workRoot, "crucible-supervisor", "r-xr-xr-x", "sessions run no commands");
    }

    /** Whether a session's sandbox can run a supervisor (commands beside its interpreter). */
    public boolean supervises() {
        return supervisor != null;
    }

    /** The crucible-launch binary, or null (sh + setpriv). */
    public Path helper() {
        return helper;
    }

    /** Whether sandboxes start through crucible-launch (else sh + setpriv). */
    public boolean viaHelper() {
        return helper != null;
    }

    /** The bwrap binary every sandbox is built by. */
    public Path bwrap() {
        return bwrap;
    }

    /** Whether a sandbox can be started in a network namespace of the server's (crucible-launch, else nsenter). */
    public boolean joinsNetNamespaces() {
        return helper != null || nsenter != null;
    }

    /**
     * The argv of one sandbox.
     *
     * @param uid the host uid to become, or -1 to stay the server's uid
     * @param group the cgroups to join before anything runs, or null without cgroups (memory is then bounded by
     *     RLIMIT_AS instead)
     * @param netns the network namespace to join ({@code NetNamespace.path()}): one for a spec with egress, maybe one for
     *     a session's sandbox (its ports), else null (bubblewrap's own empty namespace)
     */
    public List<String> argv(int uid, Cgroups.RunGroup group, SandboxSpec spec, String netns) {
        return argv(uid, group, spec, netns, null);
    }

    /**
     * The argv of one sandbox whose program runs under crucible-supervisor when {@code control} is not null: the
     * launcher connects to the server's listener at {@code control} before anything else starts, and the supervisor
     * (bound read-only at {@value #SUPERVISOR}) starts the spec's command as its first child.
     */
    public List<String> argv(int uid, Cgroups.RunGroup group, SandboxSpec spec, String netns, Path control) {
        if (control != null && !supervises()) {
            throw new IllegalStateException("this build has no crucible-supervisor (or no crucible-launch)");
        }
        if (spec.egress() != null && netns == null) {
            throw new IllegalArgumentException("egress needs the network namespace its proxy listens in");
        }
        List<Path> procsFiles = group == null ? List.of() : group.procsFiles();
        List<Rlimit> rlimits = rlimits(uid, group == null, spec);
        Path program = netns == null ? seccomp : seccompInet.get();
        List<String> argv = helper != null ? viaHelper(procsFiles, rlimits, uid, program, netns)
                : viaShell(procsFiles, rlimits, uid, program, netns);
        if (control != null) {
            argv.addAll(argv.size() - 1, List.of("--control", control.toString()));
        }
        argv.addAll(bwrapArguments(spec, netns != null));
        if (control != null) {
            argv.addAll(argv.size() - 2, List.of("--ro-bind", supervisor.toString(), SUPERVISOR));
            argv.addAll(List.of("--", SUPERVISOR, "4"));
        }
        argv.add("--");
        argv.addAll(spec.command());
        return argv;
    }

    /** How many host uids a session with root inside maps: 0-999 and 1001-4094 to its block, 1000 to its own uid. */
    public static final int ROOT_BLOCK = UidLayout.ROOT_BLOCK;
    public static final long ROOT_UID_BASE = UidLayout.ROOT_UID_BASE; // see UidLayout#rootUid

    /** See {@link RootedArgv#idmapUnavailable}. */
    public String idmapUnavailable(Path dir) {
        return helper == null ? "no crucible-launch" : RootedArgv.idmapUnavailable(helper, dir);
    }

    /** See {@link RootedArgv#argv}. */
    public List<String> rootedArgv(long rootUid, int userUid, Cgroups.RunGroup group, SandboxSpec spec, String netns,
            Path control) {
        return RootedArgv.argv(this, rootUid, userUid, group, spec, netns, control);
    }

    Path seccompProgram(boolean inet) {
        return inet ? seccompInet.get() : seccomp;
    }

    Path supervisorBinary() {
        return supervisor;
    }

    /** Where a session's sandbox finds its supervisor: in bwrap's own /dev, nothing of the root's. */
    public static final String SUPERVISOR = "/dev/.crucible-supervisor";

    /** See {@link ZygoteArgv#argv}. */
    public List<String> zygoteArgv(int uid, String map, SandboxSpec spec, Path controlDir, String zygoteSource,
            Path zygoteSeccomp) {
        return ZygoteArgv.argv(this, uid, map, spec, controlDir, zygoteSource, zygoteSeccomp);
    }

    /** The size of each fresh tmpfs of a sandbox of {@code spec}: /tmp, /workspace, /dev/shm. */
    public long tmpfsBytes(SandboxSpec spec) {
        return Math.min(config.tmpfsBytes(), spec.limits().memoryMb() * 1024L * 1024L / 2);
    }

    /** The rlimits of a sandbox of {@code spec} as {@code name=value,...} (a zygote's child sets them itself). */
    public String rlimitSpec(int uid, boolean fallbackMemory, SandboxSpec spec) {
        return rlimits(uid, fallbackMemory, spec).stream().map(r -> r.name() + "=" + r.value())
                .collect(Collectors.joining(","));
    }

    /** One rlimit (bytes or its own unit) as crucible-launch names it, with {@code ulimit}'s flag and unit divisor. */
    record Rlimit(String name, char flag, long value, long shellUnit) {}

    /** The rlimits: second guards behind the cgroups (see docs/sandbox-recipe.md, Rlimits). */
    List<Rlimit> rlimits(int uid, boolean fallbackMemory, SandboxSpec spec) {
        Limits limits = spec.limits();
        List<Rlimit> r = new ArrayList<>(List.of(new Rlimit("core", 'c', 0, 1),
                new Rlimit("nofile", 'n', config.openFiles(), 1),
                new Rlimit("fsize", 'f', config.fileSizeBytes(), 512)));
        if (spec.workspace() == null) { // a session lives on: its CPU is bounded by the cgroup's quota instead
            r.add(new Rlimit("cpu", 't', cpuSeconds(limits), 1));
        }
        if (uid >= 0) {
            // per host uid, so only meaningful with a uid of our own; the pids cgroup is the real bound
            r.add(new Rlimit("nproc", 'p', limits.pids() + 32, 1));
        }
        if (fallbackMemory) {
            r.add(new Rlimit("as", 'v', (limits.memoryMb() + 64L) * 1024 * 1024, 1024));
        }
        return r;
    }

    private static long cpuSeconds(Limits limits) {
        return Math.max(1, (limits.cpuMs() + 999) / 1000) + 1;
    }

    /** crucible-launch's options, up to and including the {@code --} before bwrap. */
    List<String> viaHelper(List<Path> procsFiles, List<Rlimit> rlimits, long uid, Path program, String netns) {
        List<String> argv = new ArrayList<>(List.of(helper.toString()));
        if (netns != null) {
            argv.addAll(List.of("--netns", netns));
        }
        for (Path procs : procsFiles) {
            argv.addAll(List.of("--cgroup", procs.toString()));
        }
        for (Rlimit r : rlimits) {
            argv.addAll(List.of("--rlimit", r.name() + "=" + r.value()));
        }
        argv.addAll(List.of("--seccomp", program.toString()));
        if (uid >= 0) {
            argv.addAll(List.of("--uid", Long.toString(uid)));
        }
        argv.add("--");
        return argv;
    }

    /** The portable launcher, for hosts where crucible-launch could not be built: {@code sh}, then {@code setpriv}. */
    private List<String> viaShell(List<Path> procsFiles, List<Rlimit> rlimits, int uid, Path program, String netns) {
        List<String> argv = new ArrayList<>();
        if (netns != null) {
            if (nsenter == null) {
                throw new IllegalStateException("egress needs crucible-launch or nsenter (apt-get install util-linux)");
            }
            argv.addAll(List.of(nsenter.toString(), "--net=" + netns, "--"));
        }
        argv.addAll(List.of("/bin/sh", "-c", wrapperScript(rlimits, program), "crucible-launch"));
        for (Path procs : procsFiles) {
            argv.add(procs.toString());
        }
        argv.add("--");
        if (uid >= 0) {
            argv.addAll(List.of(setpriv.toString(), "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--pdeathsig=SIGKILL", "--"));
        }
        return argv;
    }

    private static String wrapperScript(List<Rlimit> rlimits, Path program) {
        StringBuilder s = new StringBuilder();
        s.append("for g; do [ \"$g\" = -- ] && break; echo $$ > \"$g\" || { echo \"crucible-launch: cannot join $g\" >&2; exit ").append(JOIN_FAILED).append("; }").append("; done\n");
        s.append("while [ \"$1\" != -- ]; do shift; done; shift\n");
        s.append(rlimits.stream().map(r -> "ulimit -" + r.flag() + " " + r.value() / r.shellUnit())
                .collect(Collectors.joining("; ")));
        s.append('\n');
        s.append("exec 3< '").append(program).append("'\n");
        s.append("unset PWD\n");
        // out of the server's process group and session: a terminal's Ctrl-C must not reach the sandbox
        s.append("command -v setsid >/dev/null && exec setsid \"$@\"\n");
        s.append("exec \"$@\"\n");
        return s.toString();
    }

    /** bubblewrap's options; {@code ownNet}: the launcher joined a namespace of the server's (egress, a session's ports). */
    List<String> bwrapArguments(SandboxSpec spec, boolean ownNet) {
        String id = spec.root() instanceof SandboxRoot.Writable ? "0" : "1000"; // an image build's steps are root inside
        List<String> a = new ArrayList<>(List.of(bwrap.toString(),
                "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--uid", id, "--gid", id, "--hostname", "sandbox"));
        if (ownNet) {
            a.add("--share-net"); // the launcher joined the server's namespace for this sandbox: loopback (+ the proxy)
        }
        switch (spec.root()) {
            case SandboxRoot.Host() -> {
                usrOf(Path.of("/usr"), a);
                a.addAll(List.of("--ro-bind", etc.toString(), "/etc"));
            }
            case SandboxRoot.Usr(Path dir) -> {
                usrOf(dir.resolve("usr"), a);
                Path etcRoot = dir.resolve("etc");
                a.addAll(List.of(
                        "--ro-bind-try", etcRoot.resolve("alternatives").toString(), "/etc/alternatives",
                        "--ro-bind-try", etcRoot.resolve("ld.so.cache").toString(), "/etc/ld.so.cache"));
                syntheticIdentity(a);
            }
            case SandboxRoot.Image(Path dir) -> {
                // the image's whole root, read-only; the store made every mount point below, so nothing is created in it
                a.addAll(List.of("--ro-bind", dir.toString(), "/"));
                syntheticIdentity(a);
            }
            case SandboxRoot.Writable(Path dir) -> {
                a.addAll(List.of("--bind", dir.toString(), "/"));
                syntheticIdentity(a);
            }
            case SandboxRoot.Overlaid own -> a.addAll(RootedArgv.binds(own));
        }
        // not in an image (host paths), nor in a session's own root (copied in: its root could steer bwrap by symlink)
        if (!(spec.root() instanceof SandboxRoot.Image) && !(spec.root() instanceof SandboxRoot.Overlaid)) {
            for (String path : spec.readOnlyBindsIfPresent()) {
                a.addAll(List.of("--ro-bind-try", path, path));
            }
        }
        long tmpfs = tmpfsBytes(spec);
        // /dev/shm lives in the fresh tmpfs that --dev mounts: private, memory-charged, RLIMIT_FSIZE per file
        a.addAll(List.of("--proc", "/proc", "--dev", "/dev"));
        if (spec.root() instanceof SandboxRoot.Overlaid) { // made by root inside: everyone's, as a system's /tmp is
            a.addAll(List.of("--perms", "1777"));
        }
        a.addAll(List.of("--size", Long.toString(tmpfs), "--tmpfs", "/tmp"));
        if (spec.init()) {
            a.addAll(List.of("--as-pid-1", "--mqueue", "/dev/mqueue"));
        }
        if (spec.workspace() != null) {
            a.addAll(List.of("--bind", spec.workspace().toString(), "/workspace"));
        } else {
            a.addAll(List.of("--size", Long.toString(tmpfs), "--tmpfs", "/workspace"));
        }
        for (Map.Entry<String, Path> file : spec.files().entrySet()) {
            a.addAll(List.of("--ro-bind", file.getValue().toString(), file.getKey()));
        }
        if (spec.buildDir() != null) {
            a.addAll(List.of(spec.buildWritable() ? "--bind" : "--ro-bind", spec.buildDir().toString(), "/build"));
        }
        a.addAll(List.of("--chdir", "/workspace", "--clearenv",
                "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
                "--setenv", "HOME", "/workspace",
                "--setenv", "LANG", "C.UTF-8",
                "--setenv", "USER", "sandbox"));
        for (Map.Entry<String, String> e : spec.env().entrySet()) {
            a.addAll(List.of("--setenv", e.getKey(), e.getValue()));
        }
        if (spec.egress() != null) {
            ProxyEnvironment.VARIABLES.forEach((name, value) -> a.addAll(List.of("--setenv", name, value)));
        }
        a.addAll(List.of("--cap-drop", "ALL", "--seccomp", "3"));
        return a;
    }

    /** {@code usr} read-only at /usr, with the usr-merge links /bin, /lib, /sbin (and /lib64 where it exists). */
    private static void usrOf(Path usr, List<String> a) {
        a.addAll(List.of("--ro-bind", usr.toString(), "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/sbin", "/sbin"));
        if (Files.isDirectory(usr.resolve("lib64"))) {
            a.addAll(List.of("--symlink", "usr/lib64", "/lib64"));
        }
    }

    /** The synthetic passwd, group and hosts over a root that is not the host's (see docs/sandbox-recipe.md). */
    private void syntheticIdentity(List<String> a) {
        a.addAll(List.of(
                "--ro-bind", etc.resolve("passwd").toString(), "/etc/passwd",
                "--ro-bind", etc.resolve("group").toString(), "/etc/group",
                "--ro-bind", etc.resolve("hosts").toString(), "/etc/hosts"));
    }
}
