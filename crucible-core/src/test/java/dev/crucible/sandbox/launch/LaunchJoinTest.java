package dev.crucible.sandbox.launch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * crucible-launch's step 11 ({@code --join PID}, how the server reaches a running gVisor sandbox's control socket)
 * joins only a process that is a child of its own parent, the server: never a process of anyone else, so a pid a
 * caller got wrong, or one reused, is no way into another process's namespaces.
 */
class LaunchJoinTest {
    @TempDir
    Path dir;

    private String launch(long pid) throws Exception {
        Path helper = LaunchCommand.extractHelper(dir);
        Capability.GCC.require(helper != null ? null : "no crucible-launch in this build (no C compiler)");
        Capability.ROOT.require(); // crucible-launch's uid switch needs it
        Path seccomp = Files.writeString(dir.resolve("seccomp"), "x");
        Process p = new ProcessBuilder(List.of(helper.toString(), "--uid", "65534", "--join", Long.toString(pid),
                "--seccomp", seccomp.toString(), "--", "/usr/bin/true")).redirectErrorStream(true).start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return p.exitValue() + " " + said.strip();
    }

    @Test
    void aProcessThatIsNotTheServersChildIsNeverJoined() throws Exception {
        assertThat(launch(1)).as("pid 1: no child of the server").startsWith("125 ")
                .contains("not a sandbox of this server");
        long self = ProcessHandle.current().pid(); // the server itself: its parent is not crucible-launch's
        assertThat(launch(self)).startsWith("125 ").contains("not a sandbox of this server");
        Process sibling = new ProcessBuilder("/usr/bin/sleep", "60").start();
        try { // a child of the server passes that check; joining its namespaces as another uid is then refused
            assertThat(launch(sibling.pid())).startsWith("125 ").contains("cannot join the sandbox's namespaces");
        } finally {
            sibling.destroyForcibly();
        }
    }
}
