package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Whether a host can give sessions a root of their own: the kernel's release, and crucible-launch's probe. */
class SessionRootsTest {
    @Test
    void aKernelReleaseIsComparedByItsFirstTwoNumbers() {
        assertThat(SessionRoots.kernelAtLeast("6.18.44-fc-v657", 5, 19)).isTrue();
        assertThat(SessionRoots.kernelAtLeast("5.19.0", 5, 19)).isTrue();
        assertThat(SessionRoots.kernelAtLeast("5.15.0-91-generic", 5, 19)).isFalse();
        assertThat(SessionRoots.kernelAtLeast("4.19", 5, 19)).isFalse();
        assertThat(SessionRoots.kernelAtLeast("", 5, 19)).isFalse();
        assertThat(SessionRoots.kernelAtLeast("weird", 5, 19)).isFalse();
    }

    @Test
    void theProbeTellsAnIdmappableFileSystemFromOneThatIsNot() throws Exception {
        Capability.ROOT.require();
        Path helper = TestHost.crucible().sandbox().host().workRoot().resolve("crucible-launch");
        Capability.GCC.require(Files.isExecutable(helper) ? null
                : "this build has no crucible-launch (no C compiler when it was built)");
        assertThat(probe(helper, "/proc")).as("procfs has no idmapped mounts").isNotZero();
        Capability.SESSION_ROOTS.require(probe(helper, "/usr") == 0 ? null : "this host's /usr cannot be idmapped");
        assertThat(TestHost.crucible().sandbox().rootUnavailable()).isNull();
    }

    private static int probe(Path helper, String dir) throws Exception {
        Process p = new ProcessBuilder(helper.toString(), "--probe-idmap", dir).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor();
    }
}
