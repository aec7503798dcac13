package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.os.Processes;
import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.Sandbox.Launch.Readiness;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.zygote.ZygoteTest;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A launch started ahead (a warm-pool agent) says at once when its agent was killed or stopped from outside while it
 * waited, on both paths (a spawned sandbox, a zygote's child): the moment the signal is sent, not when the agent, at
 * its low CPU weight on a busy host, gets to act on it, and not when its launcher is reaped. A warm pool asks this
 * before it hands an agent out.
 */
class WarmAgentReadinessTest {
    private static final int SIGKILL = 9;
    private static final int SIGSTOP = 19;
    private static final int SIGCONT = 18;

    @ParameterizedTest(name = "zygote {0}")
    @ValueSource(booleans = {false, true})
    void anAgentKilledWhileItWaitsHasEndedTheMomentTheSignalIsSent(boolean zygote) throws Exception {
        try (BwrapSandbox sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2).withZygote(zygote))) {
            SandboxSpec spec = ZygoteTest.poolSpec();
            Waiting waiting = waitingAgent(sandbox, spec);
            Sandbox.Launch launch = waiting.launch();
            long agent = waiting.pid();
            assertThat(Processes.kill(agent, SIGKILL)).isTrue();
            assertThat(launch.readiness()).as(() -> "agent " + agent + ", " + describe(launch)).isEqualTo(Readiness.ENDED);
            launch.abandon();
            assertThat(launch.readiness()).isEqualTo(Readiness.USED);
        }
    }

    @ParameterizedTest(name = "zygote {0}")
    @ValueSource(booleans = {false, true})
    void anAgentStoppedWhileItWaitsIsStoppedUntilContinued(boolean zygote) throws Exception {
        try (BwrapSandbox sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2).withZygote(zygote))) {
            SandboxSpec spec = ZygoteTest.poolSpec();
            Waiting waiting = waitingAgent(sandbox, spec);
            Sandbox.Launch launch = waiting.launch();
            long agent = waiting.pid();
            assertThat(Processes.kill(agent, SIGSTOP)).isTrue();
            // between the dequeue of a SIGSTOP and the stop, /proc shows neither a pending stop nor state T: wait
            Awaitility.await("the agent stopped").atMost(Duration.ofMinutes(1))
                    .pollInterval(Duration.ofMillis(5)).until(launch::readiness, r -> r == Readiness.STOPPED);
            assertThat(Processes.kill(agent, SIGCONT)).isTrue();
            // SIGCONT clears a pending stop at once; a stop already taken ends when the agent is scheduled
            Awaitility.await("the agent continued").atMost(Duration.ofMinutes(1))
                    .pollInterval(Duration.ofMillis(5)).until(launch::readiness, r -> r == Readiness.READY);
            SandboxResult r = launch.complete(WarmPool.payload("print(6 * 7)", List.of(), ""), spec.limits(),
                    OutputListener.NONE);
            assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).as(r.toString()).isEqualTo("42\n");
        }
    }

    /**
     * An agent that gets no CPU after the hand-over but is neither stopped nor gone (here frozen by the cgroup v1
     * freezer: a busy host, made certain) is behind, not stuck: it is not killed as untaken after 2 s, and a run that
     * never got the CPU by its deadline says so as a sandbox error, not as the program's timeout.
     */
    @Test
    void anAgentThatGetsNoCpuIsBehindNotStuckAndItsRunSaysItNeverRan() throws Exception {
        Path freezers = Path.of("/sys/fs/cgroup/freezer");
        Capability.CGROUP_V1.require(Files.isWritable(freezers) ? null
                : "no writable cgroup v1 freezer here (it freezes the agent to starve it with certainty)");
        try (BwrapSandbox sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2).withZygote(false))) {
            SandboxSpec spec = ZygoteTest.poolSpec();
            Waiting waiting = waitingAgent(sandbox, spec);
            Sandbox.Launch launch = waiting.launch();
            long agent = waiting.pid();
            Path freezer = Files.createDirectory(freezers.resolve("crucible-test-behind-"
                    + agent));
            try {
                Files.writeString(freezer.resolve("cgroup.procs"), Long.toString(agent));
                Files.writeString(freezer.resolve("freezer.state"), "FROZEN");
                Awaitility.await("the agent frozen").atMost(Duration.ofMinutes(1))
                        .until(() -> Files.readString(freezer.resolve("freezer.state")).strip(),
                                "FROZEN"::equals);
                assertThat(launch.readiness()).as("frozen is not stopped").isEqualTo(Readiness.READY);
                SandboxResult r = launch.complete(WarmPool.payload("print(1)", List.of(), ""),
                        new Limits(2 * Launched.TAKE_MS + 500, 10_000, 256, 1 << 20, 64),
                        OutputListener.NONE);
                assertThat(r.neverRan()).as(r.toString()).isFalse(); // not taken for stuck and run again
                assertThat(r.sandboxError()).as(r.toString()).contains("got no CPU", "never ran");
                assertThat(r.wallMs()).isGreaterThanOrEqualTo(2 * Launched.TAKE_MS + 500);
            } finally {
                Files.writeString(freezer.resolve("freezer.state"), "THAWED");
                Awaitility.await("the agent gone").atMost(Duration.ofMinutes(1))
                        .until(() -> Files.readString(freezer.resolve("cgroup.procs")).isBlank());
                Files.delete(freezer);
            }
        }
    }

    /** A launch started ahead, ready, and its agent's host pid. */
    private record Waiting(Sandbox.Launch launch, long pid) {}

    /** Settles the sandbox, launches one agent ahead, waits for it to be ready and finds its process. */
    private static Waiting waitingAgent(BwrapSandbox sandbox, SandboxSpec spec) throws InterruptedException {
        settle(sandbox, spec);
        Set<Long> before = pythons();
        Sandbox.Launch launch = sandbox.launch(spec, true);
        assertThat(launch.awaitReady(60_000)).isEqualTo(Readiness.READY);
        return new Waiting(launch, newPython(before));
    }

    /** One launch run to its end first: a zygote started, the host's caches warm. */
    private static void settle(BwrapSandbox sandbox, SandboxSpec spec) throws InterruptedException {
        SandboxResult r = sandbox.launch(spec, false).complete(WarmPool.payload("print(1)", List.of(), ""),
                spec.limits(), OutputListener.NONE);
        assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).as(r.toString()).isEqualTo("1\n");
    }

    /** The launch's cgroup members and their status, for a failure's message. */
    private static String describe(Sandbox.Launch launch) {
        StringBuilder b = new StringBuilder();
        for (long pid : ((Launched) launch).members()) {
            b.append(pid).append(' ').append(ProcessHandle.of(pid).flatMap(p -> p.info().commandLine()).orElse("?"));
            try {
                b.append(Files.readString(Path.of("/proc", Long.toString(pid), "status"))
                        .lines().filter(l -> l.startsWith("State") || l.contains("Pnd")).toList());
            } catch (IOException e) {
                b.append(" gone");
            }
        }
        return b.toString();
    }

    /** The python3 processes under this JVM. */
    private static Set<Long> pythons() {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().orElse("").contains("python3"))
                .map(ProcessHandle::pid).collect(Collectors.toSet());
    }

    /**
     * The one python3 that appeared since {@code before}: the launch's agent (a spawned one, or a zygote's child).
     * Ready means its process is in its cgroup, which a spawned agent joins before it executes python3.
     */
    private static long newPython(Set<Long> before) {
        List<Long> fresh = Awaitility.await("the launch's agent").atMost(Duration.ofMinutes(1))
                .pollInterval(Duration.ofMillis(5))
                .until(() -> pythons().stream().filter(pid -> !before.contains(pid)).toList(), l -> !l.isEmpty());
        assertThat(fresh).as("the launch's agent").hasSize(1);
        return fresh.getFirst();
    }
}
