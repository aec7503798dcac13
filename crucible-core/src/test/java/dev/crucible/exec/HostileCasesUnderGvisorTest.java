package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.error.RequestException;
import dev.crucible.image.store.TestImages;
import dev.crucible.sandbox.Isolation;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * Every executable case of the hostile catalogue behind gVisor (issue 29): the same request asking for
 * {@code "isolation": "gvisor"}, the same expectations, but where gVisor's kernel answers otherwise than the host's
 * (its entry of {@code gvisor-expectations.json} says why), no canary, no host listener reached, nothing left behind.
 */
class HostileCasesUnderGvisorTest {
    @BeforeAll
    static void gvisorRunsHere() {
        TestHost.assumeGvisor("HostileCasesUnderGvisorTest");
    }

    @Test
    void aRequestForGvisorRunsBehindItWhereverAWarmSandboxCouldServeIt() throws Exception {
        Executor executor = TestHost.crucible().executor();
        String hostKernel = Files.readString(Path.of("/proc/version"));
        ExecuteRequest probe = ExecuteRequest.of("python", "print(open('/proc/version').read(), end='')");
        for (int i = 0; i < 3; i++) { // a zygote's fork or a pooled sandbox would answer with the host's kernel
            ExecuteResult behind = executor.execute(probe.withIsolation("GVisor"));
            assertThat(behind.isolation()).isEqualTo("gvisor");
            assertThat(behind.stdout()).as("gVisor's kernel answers").isNotEmpty().isNotEqualTo(hostKernel);
            ExecuteResult plain = executor.execute(probe);
            assertThat(plain.isolation()).isEqualTo("namespaces");
            assertThat(plain.stdout()).isEqualTo(hostKernel);
        }
    }

    @Test
    void aRequestMayAskForAStrongerTierNeverAWeakerOneOrAnUnknownOne() {
        Executor executor = TestHost.crucible().executor();
        var gvisorRuntime = executor.runtimeFor("python").withIsolation(Isolation.GVISOR);
        assertThat(executor.behind(gvisorRuntime, null).tier()).isEqualTo(Isolation.GVISOR);
        assertThat(executor.behind(gvisorRuntime, Isolation.GVISOR).tier()).isEqualTo(Isolation.GVISOR);
        Assertions.assertThatThrownBy(() -> executor.behind(gvisorRuntime, Isolation.NAMESPACES))
                .isInstanceOf(RequestException.class).hasMessageContaining("never a weaker one");
        Assertions.assertThatThrownBy(() -> executor.execute(ExecuteRequest.of("python", "1")
                .withIsolation("firecracker"))).isInstanceOf(RequestException.class)
                .hasMessageContaining("\"namespaces\" or \"gvisor\"");
    }

    @Test
    void aProgramInAnImageRunsBehindGvisorOnTheImagesRoot() throws Exception {
        var image = TestImages.debianPython(TestHost.images());
        String hostKernel = Files.readString(Path.of("/proc/version"));
        ExecuteResult r = TestHost.crucible().executor().execute(ExecuteRequest.of("python", String.join("\n",
                "import os",
                "print(open('/proc/version').read(), end='')",
                "print(os.path.exists('/etc/debian_version'), sum(1 for l in open('/etc/passwd') if l.startswith('sandbox:')))",
                "open('/workspace/f', 'w').write('x'); print(sorted(os.listdir('/workspace')))"))
                .withImage(image.digest()).withIsolation("gvisor"));
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        assertThat(r.imageDigest()).isEqualTo(image.digest());
        assertThat(r.isolation()).isEqualTo("gvisor");
        assertThat(r.stdout().lines().toList()).hasSize(3).element(0).as("gVisor's kernel answers")
                .isNotEqualTo(hostKernel.strip());
        assertThat(r.stdout().lines().skip(1).toList()).containsExactly("True 1", "['f', 'main.py']");
        TestHost.assertNothingLeft();
    }

    static Stream<Arguments> cases() throws IOException {
        return HostileCasesTest.casesWith("gvisor-expectations.json");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileCaseBehindGvisorGetsItsExpectedOutcome(String id, JsonNode c, JsonNode expect) throws Exception {
        ExecuteResult result = HostileCasesTest.runAndCheck(id, " (gvisor)", c, expect,
                request -> request.withIsolation("gvisor"));
        assertThat(result.isolation()).as(id).isEqualTo("gvisor");
        TestHost.assertNothingLeft();
    }
}
