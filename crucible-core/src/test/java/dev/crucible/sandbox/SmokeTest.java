package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class SmokeTest {
    @Test
    void pythonPrints() throws Exception {
        try (Sandbox s = Sandbox.create(SandboxConfig.defaults())) {
            System.out.println(s.describe());
            SandboxResult r = s.run(SandboxSpec.of(List.of("/usr/bin/python3", "-c", "print(1)"), Limits.DEFAULT));
            System.out.println(r + " " + new String(r.stdout(), StandardCharsets.UTF_8) + new String(r.stderr(), StandardCharsets.UTF_8));
            assertThat(new String(r.stdout(), StandardCharsets.UTF_8)).isEqualTo("1\n");
            long t = System.nanoTime();
            for (int i = 0; i < 20; i++) s.run(SandboxSpec.of(List.of("/usr/bin/python3", "-c", "print(1)"), Limits.DEFAULT));
            System.out.println("avg ms " + (System.nanoTime() - t) / 20 / 1e6);
        }
    }
}
