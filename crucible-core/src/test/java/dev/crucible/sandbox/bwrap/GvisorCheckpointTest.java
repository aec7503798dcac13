package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.launch.Gvisor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Saving a sandbox behind gVisor whole and starting it again (issue 29, item 4; the building block of pausing and
 * forking sessions): memory and open files come back, the workspace is the host's as it is, and the parts of the
 * chain that make it possible hold their lines (the Sentry runs as a host uid that owns nothing, runsc's control
 * socket is in no namespace of the server's, and only this server's own sandbox can be joined).
 */
class GvisorCheckpointTest {
    private static final int NUMBER = 901; // a session number no other test uses
    static Sandbox sandbox;

    @TempDir
    Path dir;

    @BeforeAll
    static void available() {
        sandbox = TestHost.crucible().sandbox();
        TestHost.assumeGvisor("GvisorCheckpointTest");
    }

    /** A line-at-a-time Python: each line is run, and what it prints is flushed. */
    @BeforeEach
    void traversable() throws IOException { // the session's uid reaches its workspace through it, as the data directory
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    }

    private static SandboxSpec session(Path workspace, Isolation tier) {
        return new SandboxSpec(List.of("/usr/bin/python3", "-u", "-c",
                "import sys\nfor line in sys.stdin:\n    exec(line)\n    sys.stdout.flush()"), Map.of(), Map.of(),
                null, false, List.of(), null, null, new Limits(600_000, 600_000, 512, 64 * 1024, 64), workspace)
                .withIsolation(tier);
    }

    private static String ask(Sandbox.Interactive box, BufferedReader out, String line) throws IOException {
        box.stdin().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        box.stdin().flush();
        String answer = out.readLine();
        return answer != null ? answer : "(ended: " + box.exitCode() + ")";
    }

    private static BufferedReader reader(Sandbox.Interactive box) {
        return new BufferedReader(new InputStreamReader(box.stdout(), StandardCharsets.UTF_8));
    }

    @Test
    void aSavedSandboxComesBackWithItsMemoryAndItsFilesAsTheyAreNow() throws Exception {
        Path workspace = Files.createDirectories(dir.resolve("workspace"));
        SandboxSpec spec = session(workspace, Isolation.GVISOR);
        Sandbox.Interactive box = sandbox.open(spec, NUMBER, 1, dir.resolve("log"));
        Sandbox.Interactive back = null;
        try {
            BufferedReader out = reader(box);
            assertThat(ask(box, out, "x = 41; f = open('/workspace/kept', 'w+'); f.write('one'); f.flush(); print(x + 1)"))
                    .isEqualTo("42");
            int uid = sandbox.sessionUid(NUMBER);
            assertThat(Files.getAttribute(workspace.resolve("kept"), "unix:uid")).as("the program's files are the"
                    + " session uid's on the host").isEqualTo(uid);
            List<Long> sentries = ProcessHandle.of(((Resident) box).pid()).orElseThrow().descendants()
                    .filter(p -> p.info().command().orElse("").endsWith("runsc")
                            && p.info().arguments().map(a -> List.of(a).contains("boot")).orElse(false))
                    .map(p -> hostUid(p.pid())).distinct().toList();
            assertThat(sentries).as("the Sentry runs as a host uid of its own, owning nothing")
                    .containsExactly(Gvisor.sentryUid(uid));
            assertThat(Files.readString(Path.of("/proc/net/unix"))).as("runsc's control socket is in a network"
                    + " namespace of its own, not the server's").doesNotContain("runsc-sandbox");

            Path image = dir.resolve("saved");
            box.checkpoint(image);
            assertThat(((Resident) box).awaitEnd(10_000)).as("a sandbox saved, not left running, ends").isTrue();
            Files.writeString(workspace.resolve("added"), "later"); // the workspace is the host's: it is what it is now
            back = sandbox.restore(spec, NUMBER, 1, dir.resolve("log"), image);
            BufferedReader again = reader(back);
            assertThat(ask(back, again, "f.write('two'); f.flush(); print(x + 2, open('/workspace/added').read())"))
                    .as("memory and open files as they were, the workspace as it is now").isEqualTo("43 later");
            assertThat(Files.readString(workspace.resolve("kept"))).isEqualTo("onetwo");

            assertThatThrownBy(() -> box.checkpoint(dir.resolve("ended"))).isInstanceOf(IOException.class)
                    .hasMessageContaining("ended");
            Sandbox.Interactive restored = back;
            assertThatThrownBy(() -> restored.checkpoint(image)).as("never over what was saved").isInstanceOf(
                    FileAlreadyExistsException.class);
            assertThat(ask(back, again, "print(x + 3)")).as("a refused save leaves it running").isEqualTo("44");
            assertThat(image.resolve("checkpoint.img")).as("and what was saved there as it was").exists();
        } finally {
            box.close();
            if (back != null) {
                back.close();
            }
        }
    }

    @Test
    void onlyASandboxBehindGvisorIsSavedAndOnlyWhatWasSavedIsRestored() throws Exception {
        Path workspace = Files.createDirectories(dir.resolve("workspace"));
        Sandbox.Interactive box = sandbox.open(session(workspace, Isolation.NAMESPACES), NUMBER, 1, dir.resolve("log"));
        try {
            assertThatThrownBy(() -> box.checkpoint(dir.resolve("image"))).isInstanceOf(IOException.class)
                    .hasMessageContaining("gvisor");
            assertThat(box.alive()).as(Files.readString(dir.resolve("log"))).isTrue();
        } finally {
            box.close();
        }
        Path empty = Files.createDirectories(dir.resolve("empty"));
        assertThatThrownBy(() -> sandbox.restore(session(workspace, Isolation.GVISOR), NUMBER, 1, dir.resolve("log"),
                empty)).isInstanceOf(IOException.class).hasMessageContaining("no saved sandbox");
        assertThatThrownBy(() -> sandbox.restore(session(workspace, Isolation.NAMESPACES), NUMBER, 1,
                dir.resolve("log"), empty)).isInstanceOf(IOException.class).hasMessageContaining("gVisor");
    }

    private static long hostUid(long pid) {
        try {
            return Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream().filter(l -> l.startsWith("Uid:"))
                    .map(l -> Long.parseLong(l.split("\\s+")[1])).findFirst().orElse(-1L);
        } catch (IOException e) {
            return -1;
        }
    }
}
