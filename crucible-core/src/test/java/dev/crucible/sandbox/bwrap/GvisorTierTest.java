package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.launch.Gvisor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The gVisor tier (issue 29) through the real launcher: the same program, stdin, files and limits as the namespace
 * tier, behind gVisor's Sentry (its kernel answers, not the host's), in the run's cgroups as the slot's uid, and no
 * network.
 */
class GvisorTierTest {
    static Sandbox sandbox;

    @BeforeAll
    static void available() {
        sandbox = TestHost.crucible().sandbox();
        TestHost.assumeGvisor("GvisorTierTest");
    }

    private static SandboxResult python(String code, byte[] stdin, Limits limits) throws Exception {
        return sandbox.run(new SandboxSpec(List.of("/usr/bin/python3", "-c", code), Map.of("MARK", "m"),
                Map.of(), null, false, List.of(), null, stdin, limits).withIsolation(Isolation.GVISOR));
    }

    private static String out(SandboxResult r) {
        return new String(r.stdout(), StandardCharsets.UTF_8);
    }

    @Test
    void aProgramRunsBehindGvisorsKernelWithTheSameFileSystemAndIdentity() throws Exception {
        SandboxResult r = python(String.join("\n",
                "import os, sys, socket",
                "print(sys.stdin.read().strip(), os.environ['MARK'], os.getuid(), os.getcwd())",
                "print(open('/proc/version').read().split()[2])",
                "open('/workspace/f', 'w').write('x'); open('/tmp/g', 'w').write('y')",
                "print(sorted(os.listdir('/workspace')))",
                "try:\n    open('/usr/crucible-written', 'w')\nexcept OSError as e:\n    print('ro', e.errno in (13, 30))",
                "print(sum(1 for l in open('/etc/passwd') if l.startswith('sandbox:')))",
                "s = socket.socket(); s.settimeout(2)",
                "try:\n    s.connect(('1.1.1.1', 80)); print('NET')\nexcept OSError as e:\n    print('no network')",
                "sys.exit(3)"), "in".getBytes(StandardCharsets.UTF_8), Limits.DEFAULT);
        assertThat(r.sandboxError()).isNull();
        assertThat(r.exitCode()).as(new String(r.stderr(), StandardCharsets.UTF_8)).isEqualTo(3);
        String host = new String(Files.readAllBytes(Path.of("/proc/version")),
                StandardCharsets.UTF_8).split(" ")[2];
        assertThat(out(r).lines().toList()).containsExactly("in m 0 /workspace",
                out(r).lines().toList().get(1), "['f']", "ro True", "1", "no network");
        assertThat(out(r).lines().toList().get(1)).as("gVisor's kernel answers, not the host's").isNotEqualTo(host);
    }

    @Test
    void theLimitsHoldBehindGvisorAsTheyDoBehindNamespaces() throws Exception {
        SandboxResult slow = python("while True: pass", null, new Limits(2_000, 60_000, 256, 64 * 1024, 64));
        assertThat(slow.timedOut()).isTrue();
        SandboxResult big = python("x = bytearray(600 * 1024 * 1024); print(len(x))", null,
                new Limits(10_000, 10_000, 128, 64 * 1024, 64));
        assertThat(big.exitCode()).isNotZero();
        assertThat(out(big)).isEmpty();
        SandboxResult loud = python("import sys\nfor i in range(200000): sys.stdout.write('x' * 100)", null,
                new Limits(10_000, 10_000, 256, 1024, 64));
        assertThat(loud.stdoutTruncated()).isTrue();
    }

    @Test
    void aSandboxStartedAheadBehindGvisorStandsReadyAndTakesItsProgram() throws Exception {
        var runtime = TestHost.crucible().runtimes().find("python").orElseThrow().withIsolation(Isolation.GVISOR);
        Sandbox.Launch launch = sandbox.launch(WarmPool.launchSpec(runtime), true);
        try {
            assertThat(launch.awaitReady(30_000)).as("a warm pool hands out only a ready sandbox")
                    .isEqualTo(Sandbox.Launch.Readiness.READY);
            SandboxResult r = launch.complete(WarmPool.payload(
                    "print(open('/proc/version').read().split()[2])", List.of(), null), Limits.DEFAULT,
                    OutputListener.NONE);
            assertThat(r.exitCode()).as(new String(r.stderr(), StandardCharsets.UTF_8)).isZero();
            assertThat(out(r).strip()).as("gVisor's kernel answers").isNotEmpty().isNotEqualTo(new String(
                    Files.readAllBytes(Path.of("/proc/version")),
                    StandardCharsets.UTF_8).split(" ")[2]);
        } finally {
            launch.abandon();
        }
    }

    @Test
    void aWarmGvisorSandboxIsReadyUntilItsKernelDiesNotWhenALauncherHelperEnds() throws Exception {
        var runtime = TestHost.crucible().runtimes().find("python").orElseThrow().withIsolation(Isolation.GVISOR);
        Launched launch = (Launched) sandbox.launch(WarmPool.launchSpec(runtime), true);
        try {
            List<Sandbox.Launch.Readiness> seen = new ArrayList<>();
            long deadline = System.nanoTime() + 30_000_000_000L;
            Sandbox.Launch.Readiness now;
            do { // polled from the very start, as the pool does: the launcher's passing helpers come and go meanwhile
                now = launch.readiness();
                seen.add(now);
            } while (now != Sandbox.Launch.Readiness.READY && System.nanoTime() < deadline);
            assertThat(seen).as("never taken for ended while it started").doesNotContain(
                    Sandbox.Launch.Readiness.ENDED).endsWith(Sandbox.Launch.Readiness.READY);
            long sentry = launch.members().stream().filter(p -> ProcessHandle.of(p).flatMap(ProcessHandle::parent)
                    .map(ProcessHandle::pid).filter(q -> Gvisor.isSentry(p, q)).isPresent())
                    .findFirst().orElseThrow();
            ProcessHandle.of(sentry).orElseThrow().destroyForcibly();
            assertThat(launch.awaitReady(30_000)).as("its kernel killed from outside, it is ended")
                    .isEqualTo(Sandbox.Launch.Readiness.ENDED);
        } finally {
            launch.abandon();
        }
    }
}
