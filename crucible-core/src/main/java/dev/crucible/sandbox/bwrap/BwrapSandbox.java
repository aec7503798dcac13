package dev.crucible.sandbox.bwrap;

import dev.crucible.health.PartStatus;
import dev.crucible.health.Replacements;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxHost;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.SandboxUnavailableException;
import dev.crucible.sandbox.cgroup.CgroupTuning;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.cgroup.CpuShare;
import dev.crucible.sandbox.launch.Gvisor;
import dev.crucible.sandbox.launch.GvisorControl;
import dev.crucible.sandbox.launch.HostTools;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.launch.ProcessSpawner;
import dev.crucible.sandbox.launch.SyntheticEtc;
import dev.crucible.sandbox.seccomp.SeccompProgram;
import dev.crucible.sandbox.zygote.ZygoteChild;
import dev.crucible.sandbox.zygote.Zygotes;
import dev.crucible.util.Once;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.UnaryOperator;

/**
 * The bubblewrap launcher: the per-run sequence of docs/sandbox-recipe.md (The launch chain), one named step per
 * method. It owns its threads (the one {@code crucible-launcher} thread every sandbox is spawned from, and the
 * platform threads of its pipes and cgroup files) and shuts them down on {@link #close()}. Thread-safe.
 *
 * <pre>{@code
 * try (Sandbox sandbox = BwrapSandbox.create(SandboxConfig.defaults())) {
 *     SandboxResult r = sandbox.run(SandboxSpec.of(List.of("/usr/bin/python3", "-c", "print(1)"), Limits.DEFAULT));
 * }
 * }</pre>
 */
public final class BwrapSandbox implements Sandbox {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");

    private final Path workRoot;
    private final SyntheticEtc etc;
    private final LaunchCommand command;
    private final Cgroups cgroups;
    private final ExecutorService pipes = PipeThreads.create();
    private final Slots slots;
    private final SessionRoots roots;
    private final ProcessSpawner spawner;
    private final BwrapHost host;
    private final Set<Process> live = ConcurrentHashMap.newKeySet();
    private final Zygotes zygotes;
    private final Replacements replacements = new Replacements();

    private final int serverUid;
    private volatile boolean noOwnNetwork;

    private BwrapSandbox(SandboxConfig config, HostTools tools, byte[] program) throws IOException {
        this.workRoot = Files.createTempDirectory(config.workParent(), "crucible-");
        Files.setPosixFilePermissions(workRoot, PosixFilePermissions.fromString("rwx--x--x"));
        Path seccomp = workRoot.resolve("seccomp.bpf");
        Files.write(seccomp, program);
        Files.setPosixFilePermissions(seccomp, PosixFilePermissions.fromString("rw-------"));
        // the egress variant only when a sandbox first asks for egress: nothing added to every start-up
        Once<Path> seccompInet = lazyProgram(workRoot.resolve("seccomp-inet.bpf"), SeccompProgram.Socket.INET);
        this.serverUid = tools.uid();
        this.etc = SyntheticEtc.write(workRoot.resolve("etc"));
        this.command = new LaunchCommand(config, etc.dir(), seccomp, seccompInet::get, tools,
                config.launchHelper() ? LaunchCommand.extractHelper(workRoot) : null,
                config.launchHelper() ? LaunchCommand.extractSupervisor(workRoot) : null);
        this.cgroups = Cgroups.detect();
        cgroups.removeStale();
        String tuning = cgroups instanceof Cgroups.None ? "favordynmods: not needed (no cgroups)"
                : CgroupTuning.favorDynamicModifications(tools.uid() == 0, config.tuneCgroups());
        this.slots = new Slots(config, cgroups, tools.uid() == 0, tools.uid(), pipes);
        this.spawner = new ProcessSpawner();
        this.roots = new SessionRoots(slots, command);
        Once<Path> seccompZygote = lazyProgram(workRoot.resolve("seccomp-zygote.bpf"), SeccompProgram.Socket.ZYGOTE);
        this.zygotes = new Zygotes(command, spawner, pipes, workRoot, slots.layout(),
                config.zygote() ? null : "turned off (CRUCIBLE_ZYGOTE=0)", seccomp, seccompZygote::get, etc,
                replacements);
        this.host = BwrapHost.report(config, tools, command, cgroups, tuning, program.length / 8, slots, workRoot);
    }

    /**
     * Creates a sandbox launcher after checking the host: bubblewrap, libseccomp, setpriv when root.
     *
     * @throws SandboxUnavailableException with one line saying what is missing and how to install it
     */
    public static BwrapSandbox create(SandboxConfig config) {
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
                BwrapHost.selfTest(sandbox);
            }
            return sandbox;
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot prepare a work directory in " + config.workParent() + ": "
                    + e.getMessage(), e);
        }
    }

    @Override
    public Launch launch(SandboxSpec spec, boolean ahead) throws InterruptedException {
        Slots.Claim claim = slots.take(); // waits for a free slot; the claim holds what the run takes until released
        boolean started = false;
        SandboxNetwork network = null;
        try {
            UnaryOperator<Limits> onHost = Gvisor.hostLimits(spec);
            Cgroups.RunGroup group = makeGroups(claim, onHost.apply(spec.limits()), ahead);
            Lending.buildDir(claim, spec);
            Lending.root(claim, spec);
            network = SandboxNetwork.open(spec, spawner, egressUnavailable());
            Process process = forkOrSpawn(claim, group, spec, network);
            started = true;
            return supervise(process, group, claim, spec.limits(), ahead, network, onHost,
                    spec.isolation() == Isolation.GVISOR);
        } catch (IOException e) {
            return new FailedLaunch("cannot start the sandbox: " + e.getMessage());
        } finally {
            if (!started) {
                claim.release();
                PipeThreads.closeQuietly(network);
            }
        }
    }

    @Override
    public Interactive open(SandboxSpec spec, int number, double cpus, Path log) throws IOException, InterruptedException {
        return start(spec, number, cpus, log, null);
    }

    @Override
    public Interactive restore(SandboxSpec spec, int number, double cpus, Path log, Path image)
            throws IOException, InterruptedException {
        if (spec.isolation() != Isolation.GVISOR) {
            throw new IOException("only a sandbox behind gVisor can be restored (isolation \"gvisor\")");
        }
        return start(spec, number, cpus, log, image);
    }

    /** A session's sandbox, new, or behind gVisor restored from {@code image} when not null. */
    private Interactive start(SandboxSpec spec, int number, double cpus, Path log, Path image)
            throws IOException, InterruptedException {
        if (spec.workspace() == null) {
            throw new IllegalArgumentException("a long-lived sandbox needs a workspace directory");
        }
        int uid = sessionUid(number);
        Lending.workspace(spec.workspace(), uid);
        Cgroups.RunGroup group = null;
        SandboxNetwork network = null;
        boolean started = false;
        ControlListener control = null;
        try {
            boolean gvisor = spec.isolation() == Isolation.GVISOR; // no supervisor or netns of ours
            group = slots.sessionGroup(Gvisor.hostLimits(spec).apply(spec.limits()), cpus);
            network = spec.egress() != null ? SandboxNetwork.open(spec, spawner, egressUnavailable())
                    : gvisor ? null : ownNetwork();
            control = command.supervises() && !gvisor ? ControlListener.open(workRoot.resolve("control")) : null;
            Process process = spawn(spec.root() instanceof SandboxRoot.Overlaid
                    ? roots.argv(number, uid, group, spec, network, control)
                    : buildArgv(uid, group, spec, network, control, image), log);
            SocketChannel channel;
            try {
                channel = control == null ? null : control.accept(process); // one that never connects is killed
            } catch (IOException | InterruptedException e) {
                live.remove(process);
                throw e;
            }
            started = true;
            return reside(process, group, network, channel, gvisor ? command.gvisor().control(spawner, command, uid)
                    : null);
        } finally {
            PipeThreads.closeQuietly(control);
            if (!started) {
                if (group != null) {
                    group.destroy();
                }
                PipeThreads.closeQuietly(network);
            }
        }
    }

    /** A seccomp program written to {@code file} (owner-only) when first asked for. */
    private static Once<Path> lazyProgram(Path file, SeccompProgram.Socket sockets) {
        return new Once<>(() -> Files.setPosixFilePermissions(Files.write(file, SeccompProgram.shared(sockets)),
                PosixFilePermissions.fromString("rw-------")));
    }

    /** The run's cgroups with its limits written, at a low CPU weight when launched ahead; null without cgroups. */
    private static Cgroups.RunGroup makeGroups(Slots.Claim claim, Limits limits, boolean ahead) throws IOException {
        Cgroups.RunGroup group = claim.takeGroups();
        if (group != null) {
            group.limit(limits);
            if (ahead) {
                group.weigh(CpuShare.BACKGROUND);
            }
        }
        return group;
    }

    /** A session's own namespace for its ports; null (no ports) where this host cannot make one, then never tried. */
    private SandboxNetwork ownNetwork() throws InterruptedException {
        if (!command.supervises() || egressUnavailable() != null || noOwnNetwork) {
            return null;
        }
        try {
            return SandboxNetwork.own(spawner);
        } catch (IOException e) { // a container that refuses unshare(CLONE_NEWNET)
            noOwnNetwork = true;
            LOG.log(System.Logger.Level.WARNING, "sessions get no ports here: no network namespace (" + e.getMessage()
                    + ")");
            return null;
        }
    }

    @Override
    public String egressUnavailable() {
        if (serverUid != 0) {
            return "network egress needs the server to run as root: it makes each such sandbox's network namespace";
        }
        if (!command.joinsNetNamespaces()) {
            return "network egress needs crucible-launch or nsenter (apt-get install util-linux)";
        }
        return null;
    }

    /** The mount points its binds need in /etc, then the launcher's argv (with a supervisor on {@code control}). */
    private List<String> buildArgv(int uid, Cgroups.RunGroup group, SandboxSpec spec, SandboxNetwork network,
            ControlListener control, Path image) throws IOException {
        etc.addMountPoints(spec);
        if (spec.isolation() == Isolation.GVISOR) { // the same chain, runsc as its last step
            return image != null ? command.gvisor().restoreArgv(command, uid, group, spec, image)
                    : command.gvisor().argv(command, uid, group, spec);
        }
        return command.argv(uid, group, spec, network == null ? null : network.namespace().path(),
                control == null ? null : control.path());
    }

    /** Starts the launcher from the one launcher thread, stderr to {@code log} when not null; counted as live. */
    private Process spawn(List<String> argv, Path log) throws IOException, InterruptedException {
        Process process = spawner.start(argv, log);
        live.add(process);
        return process;
    }

    @Override
    public boolean forks(SandboxSpec spec) {
        return zygotes.serves(spec);
    }

    /**
     * A child of the zygote for a launch one serves (the Python warm-pool agent), else a spawned sandbox; a zygote
     * that cannot be started or asked leaves the launch to the spawn path.
     */
    private Process forkOrSpawn(Slots.Claim claim, Cgroups.RunGroup group, SandboxSpec spec, SandboxNetwork network)
            throws IOException, InterruptedException {
        if (network == null && zygotes.serves(spec)) {
            try {
                ZygoteChild child = zygotes.fork(spec, claim.uid(), group);
                if (group != null) {
                    child.killGroupToo(group::killAll);
                }
                live.add(child);
                return child;
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "zygote fork failed; spawning: " + e, e);
            }
        }
        return spawn(buildArgv(claim.uid(), group, spec, network, null, null), null);
    }

    /** Hands a started run to its supervisor, which gives the slot back when the run is over. */
    private Launch supervise(Process process, Cgroups.RunGroup group, Slots.Claim claim, Limits limits, boolean ahead,
            SandboxNetwork network, UnaryOperator<Limits> onHost, boolean gvisor) {
        return new Launched(process, group, ahead, limits.outputBytes(), pipes, onHost, gvisor, () -> {
            live.remove(process);
            PipeThreads.closeQuietly(network);
            claim.release();
        });
    }

    /** Wraps a started session sandbox; closing it sweeps its cgroups in the background. */
    private Interactive reside(Process process, Cgroups.RunGroup group, SandboxNetwork network, SocketChannel control,
            GvisorControl saver) {
        return new Resident(process, group, control, network, saver, () -> {
            live.remove(process);
            PipeThreads.closeQuietly(network);
            if (group != null) {
                slots.teardownLater(group);
            }
        });
    }

    @Override
    public String rootUnavailable() {
        return roots.unavailable();
    }

    @Override
    public void prepareRoot(SandboxRoot.Overlaid root, int number, List<String> hostFiles) throws IOException {
        roots.prepare(root, number, etc.dir(), hostFiles);
    }

    @Override
    public int sessionUid(int number) {
        return slots.sessionUid(number);
    }

    @Override
    public long sessionRootUid(int number) {
        return roots.unavailable() == null ? slots.sessionRootUid(number) : -1;
    }

    @Override
    public boolean awaitIdle(Duration timeout) throws InterruptedException {
        return slots.awaitIdle(timeout);
    }

    @Override
    public void killRunning() {
        live.forEach(Process::destroyForcibly);
    }

    @Override
    public void limitSessions(long bytes) throws IOException { slots.limitSessions(bytes); }

    @Override
    public long sessionsMemoryBytes() { return slots.sessionsMemoryBytes(); }

    @Override
    public boolean limitsAdjustable() {
        return !(cgroups instanceof Cgroups.None);
    }

    String groupPrefix() { return slots.groupPrefix(); } // its run cgroups' names start so (tests: which are its own)

    @Override
    public Replacements replacements() {
        return replacements;
    }

    @Override
    public List<PartStatus> parts() {
        var parts = new ArrayList<>(List.of(slots.readiness(System.nanoTime())));
        parts.addAll(zygotes.parts());
        return parts;
    }

    @Override
    public boolean live(Duration bound) throws InterruptedException {
        return spawner.answers(bound) && !slots.stuckForGood(System.nanoTime());
    }

    @Override
    public SandboxHost host() {
        return host.with(zygotes.describe());
    }

    @Override
    public void close() {
        slots.drain(Duration.ofSeconds(10));
        zygotes.close();
        spawner.close();
        pipes.shutdown(); // idle threads end; a teardown still to come gets a thread of its own (PipeThreads)
        try (var walk = Files.walk(workRoot)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot remove " + workRoot, e);
        }
        slots.releaseUids();
    }
}
