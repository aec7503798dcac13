package dev.crucible.sandbox.bwrap;

import dev.crucible.os.ListeningSockets;
import dev.crucible.os.ProcStatus;
import dev.crucible.os.Processes;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.launch.GvisorControl;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongPredicate;

/** A long-lived sandbox (a session's interpreter): its process, its own cgroups, and nothing to supervise to an end. */
final class Resident implements Sandbox.Interactive {
    private static final long TEARDOWN_MS = 3_000;

    private final Process process;
    private final Cgroups.RunGroup group;
    private final SocketChannel control;
    private final SandboxNetwork network;
    private final GvisorControl gvisor;
    private final Runnable onClose;
    private final AtomicBoolean closed = new AtomicBoolean();


    /**
     * @param control the supervisor's control socket (crucible-supervisor.c), or null: the program alone
     * @param network the sandbox's own network namespace, or null (bubblewrap's empty one, unreachable from here)
     * @param gvisor behind gVisor, how to save it whole and signal its program; null otherwise
     */
    Resident(Process process, Cgroups.RunGroup group, SocketChannel control, SandboxNetwork network,
            GvisorControl gvisor, Runnable onClose) {
        this.process = process;
        this.gvisor = gvisor;
        this.group = group;
        this.control = control;
        this.network = network;
        this.onClose = onClose;
    }

    /** Behind gVisor (a sandbox that can be saved whole) its interpreter runs alone: no supervisor, no namespace. */
    private static final String BEHIND_GVISOR = "a session behind gVisor runs its interpreter and files only for now: no"
            + " commands, terminal or ports; use a runtime of isolation \"namespaces\" for those";

    @Override
    public String commandsUnavailable() {
        return gvisor != null ? BEHIND_GVISOR : Sandbox.Interactive.super.commandsUnavailable();
    }

    @Override
    public String portsUnavailable() {
        return network != null ? null : gvisor != null ? BEHIND_GVISOR : "the session's sandbox has no network"
                + " namespace of the server's: ports need the server to run as root with crucible-launch and"
                + " crucible-supervisor built (a C compiler at build time)";
    }

    @Override
    public SocketChannel connect(int port) throws IOException {
        if (network == null) {
            throw new IOException(portsUnavailable());
        }
        SocketChannel channel = network.namespace().socket();
        try {
            channel.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            return channel;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    @Override
    public List<Integer> listening() {
        // crucible-launch joined the namespace before it became bubblewrap: its /proc/PID/net is the sandbox's
        return network == null || !process.isAlive() ? List.of() : ListeningSockets.of(process.pid());
    }

    /** The sandbox's init once found ({@link #openRoot}); 0 before, or once it no longer passes the check. */
    private volatile long initPid;

    @Override
    public int openRoot() throws IOException {
        long monitor = process.pid();
        // bubblewrap's monitor (the process started) forks the sandbox's init: pid 1 of the sandbox's pid namespace
        LongPredicate init = p -> ProcStatus.of(p).map(s -> s.pidNamespaces() == 2 && s.innermostPid() == 1)
                .orElse(false) && ProcessHandle.of(p).flatMap(ProcessHandle::parent).map(ProcessHandle::pid)
                .orElse(-1L) == monitor;
        long known = initPid;
        if (known > 0) { // found before: checked again through its pidfd, so a reused pid is never taken for it
            try {
                return Processes.openIf(known, "root", init);
            } catch (IOException e) {
                initPid = 0; // gone, or no longer it: look again
            }
        }
        List<String> tried = new ArrayList<>();
        for (ProcessHandle child : process.toHandle().children().toList()) { // a walk of every process in /proc
            long pid = child.pid();
            try {
                int root = Processes.openIf(pid, "root", init);
                initPid = pid;
                return root;
            } catch (IOException e) {
                tried.add(pid + ": " + e.getMessage()); // not the sandbox's init, or gone: try the next child
            }
        }
        throw new IOException(process.isAlive() ? "no process of the sandbox's opens its root (" + String.join("; ", tried)
                + ")" : "the session's sandbox is not running");
    }

    @Override
    public boolean savable() {
        return gvisor != null;
    }

    @Override
    public void checkpoint(Path image) throws IOException, InterruptedException {
        if (gvisor == null) {
            Sandbox.Interactive.super.checkpoint(image);
        } else if (!process.isAlive()) {
            throw new IOException("the sandbox has ended: nothing to save");
        } else {
            gvisor.save(process, image);
        }
    }

    long pid() { // tests: the launcher's process (runsc itself behind gVisor)
        return process.pid();
    }

    boolean awaitEnd(long ms) throws InterruptedException { // tests: whether it ended within ms
        return process.waitFor(ms, TimeUnit.MILLISECONDS);
    }

    @Override
    public Optional<SocketChannel> control() {
        return Optional.ofNullable(control);
    }

    @Override
    public OutputStream stdin() {
        return process.getOutputStream();
    }

    @Override
    public InputStream stdout() {
        return process.getInputStream();
    }

    @Override
    public boolean alive() {
        return process.isAlive();
    }

    @Override
    public int signal(int signal) {
        if (gvisor != null) { // behind gVisor no host process is the program: gVisor's kernel delivers it
            try {
                return process.isAlive() && gvisor.signal(process, signal) ? 1 : 0;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 0;
            }
        }
        List<Long> pids = group != null ? group.pids()
                : process.toHandle().descendants().map(ProcessHandle::pid).toList();
        int reached = 0;
        for (long pid : pids) {
            // pinned by a pidfd before the checks: a pid reused meanwhile by a process outside is never signalled
            if (Processes.signalIf(pid, signal, p -> (control == null ? insideProgram(p) : theInterpreters(p))
                    && (group != null ? group.holds(p)
                    : process.toHandle().descendants().anyMatch(d -> d.pid() == p)))) {
                reached++;
            }
        }
        return reached;
    }

    /**
     * Whether {@code pid} is a supervised interpreter or one of its children: in the sandbox's own session
     * (bubblewrap's init made it, sid 1 inside), not the supervisor (pid 2 inside), not a command (each starts a
     * session of its own).
     */
    static boolean theInterpreters(long pid) {
        return ProcStatus.of(pid).map(s -> s.insideSandbox() && s.innermostPid() != 2 && s.innermostSid() == 1)
                .orElse(false);
    }

    /** Whether {@code pid} is the program or one of its children (not bubblewrap's monitor or init). */
    static boolean insideProgram(long pid) {
        return ProcStatus.of(pid).map(ProcStatus::insideSandbox).orElse(false);
    }

    @Override
    public long oomKills() {
        return group == null ? 0 : group.oomKills();
    }

    @Override
    public Integer exitCode() {
        return process.isAlive() ? null : process.exitValue();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        process.destroyForcibly();
        try {
            process.waitFor(TEARDOWN_MS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (control != null) {
            PipeThreads.closeQuietly(control);
        }
        PipeThreads.closeQuietly(process.getOutputStream());
        PipeThreads.closeQuietly(process.getInputStream());
        onClose.run();
    }
}
