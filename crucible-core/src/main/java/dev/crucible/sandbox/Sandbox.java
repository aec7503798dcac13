package dev.crucible.sandbox;

import dev.crucible.health.PartStatus;
import dev.crucible.health.Replacements;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Runs programs in ephemeral bubblewrap sandboxes: all namespaces, no network, read-only system, fresh tmpfs
 * {@code /tmp} and {@code /workspace}, a seccomp filter, per-run cgroups and rlimits, never as host root.
 *
 * <p>Thread-safe: {@link #run} may be called from many threads (virtual threads welcome); at most
 * {@link SandboxConfig#slots()} runs proceed at once, the others wait for a slot.
 *
 * <p>The launcher is {@code BwrapSandbox.create(config)} (sub-package {@code bwrap}); this package is the vocabulary
 * its callers speak, and depends on none of the sub-packages that build it.
 */
public interface Sandbox extends AutoCloseable {

    /**
     * Runs one program to its end, its time limit or its first broken limit. Leaves no process, cgroup or file
     * behind. Never throws for anything the program does; a failure of the sandbox itself is a result whose
     * {@link SandboxResult#sandboxError()} is set.
     *
     * @throws InterruptedException when the caller is interrupted while waiting; the run is killed first
     */
    default SandboxResult run(SandboxSpec spec) throws InterruptedException {
        return run(spec, OutputListener.NONE);
    }

    /** As {@link #run(SandboxSpec)}, passing the output to {@code listener} as it is produced. */
    default SandboxResult run(SandboxSpec spec, OutputListener listener) throws InterruptedException {
        return launch(spec).complete(spec.stdin(), spec.limits(), listener);
    }

    /**
     * Starts a sandbox now and lets it wait for its input: a warm pool launches ahead of demand and completes on a
     * request. {@code spec}'s stdin is ignored; its limits apply until {@link Launch#complete} sets the run's own.
     * Holds a slot until completed or abandoned.
     */
    default Launch launch(SandboxSpec spec) throws InterruptedException {
        return launch(spec, false);
    }

    /**
     * As {@link #launch(SandboxSpec)}; {@code ahead} marks a launch ahead of demand (warm pool), which runs at a low
     * CPU weight until {@link Launch#complete} so that it never slows the requests being served.
     */
    Launch launch(SandboxSpec spec, boolean ahead) throws InterruptedException;

    /**
     * Whether a launch of {@code spec} is a fork of a pre-started interpreter (a zygote, docs/zygote.md) rather than a
     * spawn: cheap enough to make per request instead of ahead. False by default.
     */
    default boolean forks(SandboxSpec spec) {
        return false;
    }

    /** A started sandbox waiting for its input. Used once: complete it or abandon it. */
    interface Launch {
        /**
         * Writes {@code stdin} and closes it, then supervises the program to its end under {@code limits}, timed from
         * this call. Never throws for anything the program does.
         *
         * @throws IllegalStateException when called twice
         */
        SandboxResult complete(byte[] stdin, Limits limits, OutputListener listener) throws InterruptedException;

        /**
         * Whether it can take its program now, and if not, why. For a launch started ahead this asks the kernel about
         * its agent (a signal sent to it counts at once, before a starved agent acts on it), so that a warm pool never
         * hands out an agent killed or stopped while it waited.
         */
        Readiness readiness();

        /**
         * Waits at most {@code millis} until the launch stands ready to take its program (its agent in its cgroup,
         * where it has one: from then on an empty cgroup means a dead agent); its readiness then.
         */
        Readiness awaitReady(long millis) throws InterruptedException;

        /** Kills the sandbox and releases its slot. */
        void abandon();

        /** Whether a launch can take its program. */
        enum Readiness {
            /** It waits for its program. */
            READY,
            /** Completed or abandoned already. */
            USED,
            /** It started no further yet (its agent not yet in its cgroup) within the wait. */
            STARTING,
            /** Its process ended, or is ending (a SIGKILL sent to it, a zombie). */
            ENDED,
            /** Its agent is stopped (SIGSTOP), so it would take nothing: a stuck part to replace. */
            STOPPED
        }
    }

    /**
     * Starts a long-lived sandbox to talk to over its stdin and stdout: a session's interpreter. It holds no slot; it
     * runs as the session's own uid ({@link #sessionUid}) with {@code spec.workspace()} bound read-write at
     * {@code /workspace}, under cgroups of its own with the memory and pids limits of {@code spec} and a quota of
     * {@code cpus} cores; no CPU-time rlimit. Its stderr (the interpreter's own complaints) goes to {@code log}.
     *
     * @param number the session's number, which picks its uid
     * @throws IOException when the sandbox cannot be started
     */
    Interactive open(SandboxSpec spec, int number, double cpus, Path log)
            throws IOException, InterruptedException;

    /**
     * Starts session {@code number}'s sandbox again from what {@link Interactive#checkpoint} saved in {@code image}: its
     * memory, processes and open files as they were when saved, its workspace as it is now, and new stdin and stdout
     * (the program reads and writes them where it left off). {@code spec} is the spec the saved sandbox was opened with
     * (the same session's workspace, runtime and limits). Behind gVisor only ({@link Isolation#GVISOR}).
     *
     * @throws java.io.IOException when the tier cannot restore, {@code image} holds nothing saved, or the start failed
     */
    default Interactive restore(SandboxSpec spec, int number, double cpus, Path log,
            Path image) throws IOException, InterruptedException {
        throw new IOException("this sandbox launcher cannot restore a saved sandbox");
    }

    /** The host uid of session {@code number}'s sandbox, or -1 when sandboxes run as the server's own uid. */
    int sessionUid(int number);

    /**
     * The host uid that is root inside session {@code number}'s root of its own ({@link SandboxRoot.Overlaid}), or -1
     * when this host gives sessions none ({@link #rootUnavailable()}).
     */
    default long sessionRootUid(int number) {
        return -1;
    }

    /**
     * Why sessions cannot have a writable root and a root inside ({@link SandboxRoot.Overlaid}) on this host, as a
     * sentence, or null when they can.
     */
    default String rootUnavailable() {
        return "this sandbox launcher gives sessions no root of their own";
    }

    /**
     * Writes session {@code number}'s own root as it starts ({@link SandboxRoot.Overlaid}): its skeleton with copies of
     * {@code hostFiles} (its runtime's read-only binds, which its launches then leave out), and the empty upper and work
     * directories of its layers, all the session's.
     *
     * @throws java.io.IOException when they cannot be written
     */
    default void prepareRoot(SandboxRoot.Overlaid root, int number, List<String> hostFiles)
            throws IOException {
        throw new IOException(rootUnavailable());
    }

    /** A running long-lived sandbox. Thread-safe. */
    interface Interactive {
        /** The program's standard input. */
        OutputStream stdin();

        /** The program's standard output. */
        InputStream stdout();

        boolean alive();

        /**
         * Sends {@code signal} to the program and every process it started, never to bubblewrap's own processes (nor,
         * under a supervisor, to the supervisor or its commands).
         *
         * @return how many processes it reached
         */
        int signal(int signal);

        /** How many of its processes the memory cgroup's OOM killer killed so far (0 without cgroups). */
        long oomKills();

        /** The exit code once the sandbox has ended, else null. */
        Integer exitCode();

        /** Kills the sandbox, waits for it and removes its cgroups. Idempotent. */
        void close();

        /**
         * The control socket of the sandbox's supervisor (crucible-supervisor.c), which started the program as its
         * first child and runs commands beside it; empty when the program runs alone (no supervisor in this build).
         */
        default Optional<SocketChannel> control() {
            return Optional.empty();
        }

        /**
         * Why the sandbox runs no commands beside its program (no {@link #control()}), as a sentence that says what to
         * do; asked only when it has none.
         */
        default String commandsUnavailable() {
            return "this server's sessions run no commands: its build has no crucible-supervisor or crucible-launch (a"
                    + " C compiler at build time; see crucible runtimes)";
        }

        /**
         * Why the sandbox's own servers cannot be reached from the server, as a sentence that says what to do, or null
         * when {@link #connect} can: the sandbox then has a network namespace of the server's, nothing in it but
         * loopback (and its egress proxy's listener when it has egress).
         */
        default String portsUnavailable() {
            return "this sandbox launcher gives sandboxes no network namespace of the server's";
        }

        /**
         * A TCP connection to {@code 127.0.0.1:port} inside the sandbox's network namespace: to what the sandbox
         * serves there, never to anything of the host's.
         *
         * @throws java.io.IOException when nothing listens there (ECONNREFUSED), or the sandbox has no such namespace
         *     ({@link #portsUnavailable()}) or ended
         */
        default SocketChannel connect(int port) throws IOException {
            throw new IOException(portsUnavailable());
        }

        /** The TCP ports something listens on in the sandbox's network namespace, ascending; none without one. */
        default List<Integer> listening() {
            return List.of();
        }

        /**
         * Saves the sandbox's whole state (memory, processes, open files; not its workspace, which stays on the host)
         * into {@code image}, a directory made now that must not exist, for {@link Sandbox#restore}; the sandbox then
         * ends (to go on, restore it: runsc's own "leave running" is a restore in its own process, whose stdio are not
         * the session's). Behind gVisor only.
         *
         * @throws java.io.IOException when this sandbox cannot be saved (its tier, or it ended) or the save failed
         */
        default void checkpoint(Path image) throws IOException, InterruptedException {
            throw new IOException("only a sandbox behind gVisor can be saved whole (isolation \"gvisor\")");
        }

        /** Whether {@link #checkpoint} can save this sandbox (it runs behind gVisor). */
        default boolean savable() {
            return false;
        }

        /**
         * An {@code O_PATH} descriptor of the sandbox's root directory as its processes see it ({@code
         * /proc/<pid>/root} of its init, pinned so a pid reused meanwhile is never taken for it); the caller closes
         * it. Paths below it must be resolved with {@code RESOLVE_IN_ROOT}.
         *
         * @throws java.io.IOException when the sandbox has ended, or this launcher cannot reach it
         */
        default int openRoot() throws IOException {
            throw new IOException("this sandbox launcher does not reach a sandbox's root from the host");
        }
    }

    /**
     * Waits until no run is in progress and every finished run's processes and cgroups are gone.
     *
     * @return false when the timeout passed first
     */
    boolean awaitIdle(Duration timeout) throws InterruptedException;

    /** Kills every sandbox running or waiting now (shutdown after the grace period); their runs end as killed. */
    void killRunning();

    /**
     * Holds the memory of all sessions together to {@code bytes} (the sessions' budget), each session keeping its own
     * limit: sessions admitted by what they are expected to use may overcommit, and then the kernel reclaims and
     * OOM-kills inside their group, never outside. Sessions opened later nest in it. Nothing where limits cannot be.
     */
    default void limitSessions(long bytes) throws IOException {
    }

    /** The memory all sessions together are charged now, in bytes; -1 when unknown. */
    default long sessionsMemoryBytes() {
        return -1;
    }

    /** Whether memory and pids limits can be changed after launch (cgroups present), as a warm pool needs. */
    boolean limitsAdjustable();

    /**
     * Why a sandbox cannot be given egress on this host ({@link SandboxSpec#egress()}), as a sentence that says what to
     * do, or null when it can.
     */
    default String egressUnavailable() {
        return "this sandbox launcher has no network egress";
    }

    /**
     * What this launcher reports about its host (isolation in force, warnings, work root, uids, run cgroups). The
     * default reports nothing ({@link SandboxHost#NONE}), which is all a stand-in for tests of the layers above needs.
     */
    default SandboxHost host() {
        return SandboxHost.NONE;
    }

    /**
     * The stuck or dead parts this launcher and the layers above it replaced (zygotes, warm-pool agents, session
     * interpreters), logged and counted; one instance for the launcher's life.
     */
    Replacements replacements();

    /**
     * The state of this launcher's parts, for readiness: its run slots (down when every one is stuck past its run's
     * deadline), and each zygote (degraded while one is being replaced and its runs are spawned).
     */
    default List<PartStatus> parts() {
        return List.of();
    }

    /**
     * Whether this launcher can recover by itself: false only when its launcher thread does not answer within
     * {@code bound}, or every slot has been stuck for minutes. Liveness, not readiness.
     */
    default boolean live(Duration bound) throws InterruptedException {
        return true;
    }

    /** Waits up to 10 s for runs to finish (kills nothing), then removes the work root. */
    @Override
    void close();
}
