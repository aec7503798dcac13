package dev.crucible;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.image.Images;
import dev.crucible.image.store.ImageStore;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

/** One real Crucible engine shared by the tests of a JVM, and the checks that nothing of a run is left behind. */
public final class TestHost {
    private static Crucible crucible;

    private TestHost() {}

    /**
     * The shared engine (started on first use, closed when the JVM exits), with an image store of its own in a
     * temporary directory ({@link dev.crucible.image.store.TestImages} commits images there).
     */
    public static synchronized Crucible crucible() {
        if (crucible == null) {
            Images images;
            try {
                Path store = TestDirs.create("crucible-test-images"); // deleted at exit
                images = Images.of(ImageStore.open(store), Images.PullPolicy.never());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            // the spawn path: every test on this engine covers it; the zygote path has engines of its own
            // (HostileCasesInZygoteTest, WarmPoolTest, ZygoteTest) and is the default of every server test
            crucible = Crucible.start(SandboxConfig.defaults().withSlots(4).withZygote(false), null, images);
            Runtime.getRuntime().addShutdownHook(new Thread(crucible::close));
        }
        return crucible;
    }

    /** The shared engine's image store. */
    public static ImageStore images() {
        return crucible().runtimes().images().store();
    }

    /** A zygote (docs/zygote.md) lives as long as its launcher, by design: its bwrap and its interpreter. */
    static boolean isZygote(ProcessHandle p) {
        String line = p.info().commandLine().orElse("");
        return line.contains("/tmp/.crucible-zygote") || line.contains("Crucible's Python zygote");
    }

    /**
     * Asserts that every run has been torn down: no run cgroup, no process of a slot uid or below this JVM, no
     * program directory.
     */
    public static void assertNothingLeft() throws Exception {
        Crucible c = crucible();
        assertThat(c.sandbox().awaitIdle(Duration.ofSeconds(15))).as("sandbox idle").isTrue();
        assertThat(c.sandbox().host().liveRunGroups()).as("run cgroups left").isZero();
        assertThat(ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(p -> !isZygote(p)).count()).as("child processes left").isZero();
        if (c.sandbox().host().sharedUid() < 0) {
            // a namespace's init leaves its cgroup before it has reaped the last of its children (a fork bomb's):
            // it may outlive the cgroup by a moment, never more
            int base = c.sandbox().host().uidBase();
            await("the slot uids' last processes gone").atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(50))
                    .untilAsserted(() -> assertThat(processesOfUids(base, base + 4)).as("processes of slot uids")
                            .isZero());
        }
        Path programs = c.sandbox().host().workRoot().resolve("programs");
        try (Stream<Path> left = Files.list(programs)) {
            assertThat(left.count()).as("program directories left").isZero();
        }
    }

    public static long processesOfUids(int from, int to) throws IOException {
        long count = 0;
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    List<String> status = Files.readAllLines(p.resolve("status"));
                    if (status.stream().anyMatch(l -> l.startsWith("State:") && l.contains("Z"))) {
                        // a bwrap reaper that has died and waits for the host's init to reap it; it holds no
                        // resource but a pid (this VM's init reaps every ~2 s, systemd at once)
                        continue;
                    }
                    for (String line : status) {
                        if (line.startsWith("Uid:")) {
                            int uid = Integer.parseInt(line.substring(4).trim().split("\\s+")[0]);
                            if (uid >= from && uid < to) {
                                count++;
                            }
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // the process ended while we looked
                }
            }
        }
        return count;
    }

    /**
     * Skips the calling test class, saying why on stdout, where this host cannot run the gVisor tier (no runsc, not
     * root, or its self-test failed).
     */
    public static void assumeGvisor(String who) {
        String why = crucible().sandbox().host().isolationUnavailable(Isolation.GVISOR);
        Capability.GVISOR.require(why == null ? null
                : why + " [" + who + "]");
    }
}
