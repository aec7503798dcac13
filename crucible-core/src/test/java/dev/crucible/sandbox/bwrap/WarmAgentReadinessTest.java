package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.os.Processes;
import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.Sandbox.Launch.Readiness;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.zygote.ZygoteTest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
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
            settle(sandbox, spec);
            Set<Long> before = pythons();
            Sandbox.Launch launch = sandbox.launch(spec, true);
            assertThat(launch.awaitReady(60_000)).isEqualTo(Readiness.READY);
            long agent = newPython(before);
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
            settle(sandbox, spec);
            Set<Long> before = pythons();
            Sandbox.Launch launch = sandbox.launch(spec, true);
            assertThat(launch.awaitReady(60_000)).isEqualTo(Readiness.READY);
            long agent = newPython(before);
            assertThat(Processes.kill(agent, SIGSTOP)).isTrue();
            assertThat(launch.readiness()).isEqualTo(Readiness.STOPPED);
            assertThat(Processes.kill(agent, SIGCONT)).isTrue();
            // SIGCONT clears a pending stop at once; a stop already taken ends when the agent is scheduled
            org.awaitility.Awaitility.await("the agent continued").atMost(java.time.Duration.ofMinutes(1))
                    .pollInterval(java.time.Duration.ofMillis(5)).until(launch::readiness, r -> r == Readiness.READY);
            SandboxResult r = launch.complete(WarmPool.payload("print(6 * 7)", List.of(), ""), spec.limits(),
                    OutputListener.NONE);
            assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).as(r.toString()).isEqualTo("42\n");
        }
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
                b.append(java.nio.file.Files.readString(java.nio.file.Path.of("/proc", Long.toString(pid), "status"))
                        .lines().filter(l -> l.startsWith("State") || l.contains("Pnd")).toList());
            } catch (java.io.IOException e) {
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
        List<Long> fresh = org.awaitility.Awaitility.await("the launch's agent").atMost(java.time.Duration.ofMinutes(1))
                .pollInterval(java.time.Duration.ofMillis(5))
                .until(() -> pythons().stream().filter(pid -> !before.contains(pid)).toList(), l -> !l.isEmpty());
        assertThat(fresh).as("the launch's agent").hasSize(1);
        return fresh.getFirst();
    }
}
