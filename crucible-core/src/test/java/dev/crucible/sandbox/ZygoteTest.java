package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.pool.WarmPool;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The zygote's children driven directly through the launcher: each runs, and killing one leaves its siblings. */
class ZygoteTest {
    static BwrapSandbox sandbox;

    @BeforeAll
    static void start() {
        sandbox = BwrapSandbox.start(SandboxConfig.defaults().withSlots(4));
    }

    @AfterAll
    static void stop() {
        sandbox.close();
    }

    static SandboxSpec poolSpec() {
        Limits limits = new Limits(10_000, 10_000, 256, 1 << 20, 64);
        return new SandboxSpec(List.of("/usr/bin/python3", "-c", Zygotes.PYTHON_AGENT, "main.py"), Map.of(), Map.of(),
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
        assertThat(next.alive()).as("a sibling forked before the killed child").isTrue();
        SandboxResult n = next.complete(WarmPool.payload("print(8)", List.of(), ""), spec.limits(), OutputListener.NONE);
        SandboxResult a = after.complete(WarmPool.payload("print(9)", List.of(), ""), spec.limits(), OutputListener.NONE);
        assertThat(new String(n.stdout(), StandardCharsets.UTF_8)).isEqualTo("8\n");
        assertThat(new String(a.stdout(), StandardCharsets.UTF_8)).isEqualTo("9\n");
    }

    @Test
    void aChildRunsAProgram() throws Exception {
        SandboxSpec spec = poolSpec();
        Sandbox.Launch launch = sandbox.launch(spec, false);
        SandboxResult r = launch.complete(WarmPool.payload("import os\nprint('hi', os.getuid())", List.of(), ""),
                spec.limits(), OutputListener.NONE);
        assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).isEqualTo("hi 1000\n");
        assertThat(launch).extracting("process").isInstanceOf(ZygoteChild.class);
    }
}
