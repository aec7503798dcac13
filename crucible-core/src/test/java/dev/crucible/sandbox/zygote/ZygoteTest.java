package dev.crucible.sandbox.zygote;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.uid.UidLayout;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The zygote's children driven directly through the launcher: each runs, and killing one leaves its siblings. */
public class ZygoteTest {
    static BwrapSandbox sandbox;

    @BeforeAll
    static void start() {
        sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(4));
    }

    @AfterAll
    static void stop() {
        sandbox.close();
    }

    public static SandboxSpec poolSpec() {
        return poolSpec(new Limits(10_000, 10_000, 256, 1 << 20, 64), Map.of());
    }

    /** The warm-pool agent's launch with {@code limits} and {@code files} (sandbox path to host file) bound in. */
    public static SandboxSpec poolSpec(Limits limits, Map<String, Path> files) {
        return new SandboxSpec(List.of("/usr/bin/python3", "-c", Zygotes.PYTHON_AGENT, "main.py"), Map.of(), files,
                null, false, List.of(), SandboxRoot.HOST, null, limits);
    }

    @Test
    void manyChildrenInARow() throws Exception {
        SandboxSpec spec = poolSpec();
        int failed = 0;
        for (int i = 0; i < 40; i++) {
            Sandbox.Launch launch = sandbox.launch(spec, i % 2 == 0);
            SandboxResult r = launch.complete(WarmPool.payload("print(7)", List.of(), ""), spec.limits(),
                    OutputListener.NONE);
            if (!"7\n".equals(new String(r.stdout(), StandardCharsets.UTF_8))) {
                failed++;
                System.out.println("FAILED " + i + " exit " + r.exitCode() + " " + new String(r.stderr(), StandardCharsets.UTF_8) + r.sandboxError());
            }
        }
        assertThat(failed).isZero();
    }

    @Test
    void aKilledChildLeavesTheNextAlone() throws Exception {
        SandboxSpec spec = poolSpec();
        Sandbox.Launch next = sandbox.launch(spec, true);
        Sandbox.Launch capped = sandbox.launch(spec, false);
        SandboxResult r = capped.complete(WarmPool.payload("import sys\nsys.stdout.write('x' * 3000000)", List.of(), ""),
                spec.limits(), OutputListener.NONE);
        assertThat(r.stdoutTruncated()).isTrue();
        Sandbox.Launch after = sandbox.launch(spec, true);
        assertThat(next.awaitReady(60_000)).as("a sibling forked before the killed child")
                .isEqualTo(Sandbox.Launch.Readiness.READY);
        SandboxResult n = next.complete(WarmPool.payload("print(8)", List.of(), ""), spec.limits(), OutputListener.NONE);
        SandboxResult a = after.complete(WarmPool.payload("print(9)", List.of(), ""), spec.limits(), OutputListener.NONE);
        assertThat(new String(n.stdout(), StandardCharsets.UTF_8)).isEqualTo("8\n");
        assertThat(new String(a.stdout(), StandardCharsets.UTF_8)).isEqualTo("9\n");
    }

    /** A sibling that holds every kind of shared object a program can make, while another child looks for them. */
    static final String HOLDER = """
            import ctypes, os, signal, socket, sys, time
            libc = ctypes.CDLL(None, use_errno=True)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind('\\0crucible-sibling'); s.listen(1)
            shm = libc.shmget(0x5151, 4096, 0o1666)
            sem = libc.semget(0x5152, 1, 0o1666)
            open('/tmp/sibling', 'w').write('x'); open('/dev/shm/sibling', 'w').write('x')
            open('/workspace/sibling', 'w').write('x')
            for sig in (signal.SIGTERM, signal.SIGCONT, signal.SIGUSR1):
                signal.signal(sig, lambda *a: print('SIGNALLED', flush=True))
            print('ready', os.getpid(), shm >= 0, sem >= 0, flush=True)
            time.sleep(4)
            print('holder done', flush=True)
            """;

    /** Looks for the holder, the zygote and everything they could share, by every name a program has. */
    static final String PROBER = """
            import ctypes, errno, os, signal, socket
            libc = ctypes.CDLL(None, use_errno=True)
            found = []
            fds = sorted(int(fd) for fd in os.listdir('/proc/self/fd'))  # 0, 1, 2 and the listing's own: nothing else
            if fds[:3] != [0, 1, 2] or len(fds) > 4: found.append('descriptors %s' % fds)
            if '.crucible-zygote' in open('/proc/1/net/unix').read(): found.append("the zygote's sockets in /proc/1/net")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect('\\0crucible-sibling'); found.append('abstract socket')
            except OSError:
                pass
            if libc.shmget(0x5151, 0, 0) >= 0: found.append('sysv shm')
            if libc.semget(0x5152, 0, 0) >= 0: found.append('sysv sem')
            for path in ('/tmp/sibling', '/dev/shm/sibling', '/workspace/sibling', '/tmp/.crucible-zygote/control',
                         '/tmp/.crucible-zygote'):
                if os.path.exists(path): found.append(path)
            pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
            if pids != [1, os.getpid()]: found.append('pids %s' % pids)
            for pid in range(1, 400):  # no pid of this namespace but its own names the holder or the zygote
                if pid in (1, os.getpid()): continue
                try:
                    os.kill(pid, signal.SIGTERM); found.append('signalled %d' % pid)
                except ProcessLookupError:
                    pass
                except PermissionError:
                    found.append('pid %d exists' % pid)
            try:
                os.kill(-1, signal.SIGKILL)  # everything it may signal: its own namespace only
            except ProcessLookupError:
                pass
            os.kill(0, signal.SIGCONT)  # its process group: its own session, not the zygote's
            if 'crucible-sibling' in open('/proc/net/unix').read(): found.append('a sibling socket listed')
            b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                b.bind('\\0crucible-sibling')  # a name a sibling holds is free here: no collision, no channel
            except OSError:
                found.append('abstract name taken')
            if any(not line.strip().endswith(':/') for line in open('/proc/self/cgroup')):
                found.append('cgroup paths outside its own')
            if libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0) >= 0:  # clone(CLONE_PARENT): a child the zygote must reap
                os._exit(0)
            if ctypes.get_errno() != errno.EPERM: found.append('clone(CLONE_PARENT) not refused')
            if libc.syscall(101, 16, 1, 0, 0) == 0: found.append('ptrace attach to its init')  # PTRACE_ATTACH
            if os.access('/proc/1/mem', os.R_OK): found.append('init memory readable')
            for line in open('/proc/1/status'):  # the init holds no capability, in any set, and can gain none
                if line.startswith(('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')) and int(line.split()[1], 16):
                    found.append('init ' + line.strip())
                if line.startswith('NoNewPrivs') and line.split()[1] != '1': found.append('init may gain privileges')
            print('found', found, flush=True)
            """;

    @Test
    void aSiblingFindsNothingOfAnotherOrOfTheZygote() throws Exception {
        SandboxSpec spec = poolSpec();
        Sandbox.Launch holder = sandbox.launch(spec, false);
        Sandbox.Launch prober = sandbox.launch(spec, false);
        CountDownLatch ready = new CountDownLatch(1);
        var held = Executors.newSingleThreadExecutor().submit(() -> holder.complete(
                WarmPool.payload(HOLDER, List.of(), ""), spec.limits(), (err, bytes, n) -> {
                    if (new String(bytes, 0, n, StandardCharsets.UTF_8).contains("ready")) {
                        ready.countDown();
                    }
                }));
        assertThat(ready.await(30, TimeUnit.SECONDS)).as("the holder started").isTrue();
        SandboxResult probed = prober.complete(WarmPool.payload(PROBER, List.of(), ""), spec.limits(),
                OutputListener.NONE);
        assertThat(new String(probed.stdout(), StandardCharsets.UTF_8)).as(new String(probed.stderr(),
                StandardCharsets.UTF_8)).isEqualTo("found []\n");
        SandboxResult h = held.get();
        assertThat(new String(h.stdout(), StandardCharsets.UTF_8)).as("the holder was never reached")
                .startsWith("ready 2 True True\n").endsWith("holder done\n").doesNotContain("SIGNALLED");
    }

    /**
     * Network namespaces are used again by later children (making one is the dearest step of a fork), but only empty:
     * a run that leaves an abstract socket behind (bound, listening, in flight in a socket that holds itself, so that no
     * process keeps it) reaches no later run, by name or in {@code /proc/net/unix}.
     */
    @Test
    void aLaterChildGetsANetworkNamespaceWithNothingOfAnEarlierOnesLeft() throws Exception {
        SandboxSpec spec = poolSpec();
        SandboxResult left = sandbox.launch(spec, false).complete(WarmPool.payload("""
                import array, socket
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind('\\0crucible-left-behind'); listener.listen(8)
                a, b = socket.socketpair()
                # b's own queue holds b and the listener: once closed, only the kernel's collector can free them
                a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [b.fileno(),
                          listener.fileno()]))])
                print('left', open('/proc/self/net/unix').read().count('crucible-left-behind'), flush=True)
                """, List.of(), ""), spec.limits(), OutputListener.NONE);
        assertThat(new String(left.stdout(), StandardCharsets.UTF_8)).as(new String(left.stderr(),
                StandardCharsets.UTF_8)).isEqualTo("left 1\n");
        Set<String> namespaces = new HashSet<>();
        int runs = 12;
        for (int i = 0; i < runs; i++) {
            SandboxResult r = sandbox.launch(spec, false).complete(WarmPool.payload("""
                    import os, socket
                    found = []
                    if 'crucible-left-behind' in open('/proc/net/unix').read(): found.append('listed')
                    if len(open('/proc/net/unix').read().splitlines()) != 1: found.append('a socket of another run')
                    try:
                        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect('\\0crucible-left-behind')
                        found.append('connected')
                    except OSError:
                        pass
                    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).bind('\\0crucible-left-behind')
                    print(os.stat('/proc/self/ns/net').st_ino, found, flush=True)
                    """, List.of(), ""), spec.limits(), OutputListener.NONE);
            String out = new String(r.stdout(), StandardCharsets.UTF_8);
            assertThat(out).as(new String(r.stderr(), StandardCharsets.UTF_8)).endsWith(" []\n");
            namespaces.add(out.split(" ")[0]);
        }
        assertThat(namespaces).as("runs one after another share the namespaces of ended ones").hasSizeLessThan(runs);
    }

    /** A program that daemonises (double fork, new session) does not outlive its run: its init's end kills it. */
    @Test
    void nothingOfAChildOutlivesItsRun() throws Exception {
        SandboxSpec spec = poolSpec();
        Sandbox.Launch launch = sandbox.launch(spec, false);
        SandboxResult r = launch.complete(WarmPool.payload("""
                import os, time
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        time.sleep(60)
                    os._exit(0)
                print('left a daemon', flush=True)
                """, List.of(), ""), spec.limits(), OutputListener.NONE);
        assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).isEqualTo("left a daemon\n");
        assertThat(sandbox.awaitIdle(Duration.ofSeconds(10))).isTrue();
        int base = sandbox.host().uidBase();
        assertThat(slotProcesses(base, 4)).as("processes of the slots' uids left").isZero();
    }

    /** Processes whose uid is one of the {@code slots} slot uids from {@code base}. */
    static long slotProcesses(int base, int slots) throws IOException {
        long n = 0;
        try (var procs = Files.list(Path.of("/proc"))) {
            for (var p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    for (String line : Files.readAllLines(p.resolve("status"))) {
                        if (line.startsWith("Uid:")) {
                            int uid = Integer.parseInt(line.split("\\s+")[1]);
                            if (uid >= base && uid < base + slots) {
                                n++;
                            }
                        }
                    }
                } catch (IOException e) {
                    // gone
                }
            }
        }
        return n;
    }

    /**
     * The zygote holds exactly the capabilities its children are made with, inside its own user namespace, and runs
     * under a seccomp program of its own with no_new_privs.
     */
    @Test
    void theZygoteRunsUnderAFilterWithFiveCapabilities() throws Exception {
        SandboxSpec spec = poolSpec();
        sandbox.launch(spec, false).complete(WarmPool.payload("pass", List.of(), ""), spec.limits(),
                OutputListener.NONE); // the zygote runs from here on
        List<ProcessHandle> zygotes = ProcessHandle.current().descendants()
                .filter(p -> p.info().command().orElse("").contains("python3") // not its bwrap, whose argv holds it too
                        && p.info().commandLine().orElse("").contains("Crucible's Python zygote")).toList();
        assertThat(zygotes).hasSize(1);
        List<String> status = Files.readAllLines(
                Path.of("/proc", Long.toString(zygotes.getFirst().pid()), "status"));
        long kill = 1L << 5, setgid = 1L << 6, setuid = 1L << 7, setpcap = 1L << 8, sysAdmin = 1L << 21;
        assertThat(status).contains("Seccomp:\t2", "NoNewPrivs:\t1",
                "CapEff:\t" + String.format("%016x", kill | setgid | setuid | setpcap | sysAdmin));
        assertThat(status.stream().filter(l -> l.startsWith("Uid:")).findFirst().orElseThrow())
                .as("the zygote's own host uid: the last of the launcher's block, not root")
                .isEqualTo("Uid:\t%d\t%d\t%d\t%d".formatted(sandbox.host().uidBase() + UidLayout.SIZE - 1,
                        sandbox.host().uidBase() + UidLayout.SIZE - 1, sandbox.host().uidBase() + UidLayout.SIZE - 1,
                        sandbox.host().uidBase() + UidLayout.SIZE - 1));
    }

    @Test
    void aChildRunsAProgram() throws Exception {
        // a crucible-launch that did not compile leaves the build on sh + setpriv, silently: the zygote needs it
        assertThat(sandbox.host().describe().getFirst()).contains("via crucible-launch");
        assertThat(LaunchCommand.builtBinary("crucible-init")).as("crucible-init, each child's pid 1, was built").isNotNull();
        SandboxSpec spec = poolSpec();
        Sandbox.Launch launch = sandbox.launch(spec, false);
        SandboxResult r = launch.complete(WarmPool.payload("import os\nprint('hi', os.getuid())", List.of(), ""),
                spec.limits(), OutputListener.NONE);
        assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).isEqualTo("hi 1000\n");
        assertThat(launch).extracting("process").isInstanceOf(ZygoteChild.class);
    }
}
