package dev.crucible.sandbox.uid;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.SandboxUnavailableException;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import dev.crucible.testhost.Capability;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two Crucible processes on one host never run sandboxes as the same uid, whatever their bases (issue 10, class 8;
 * issue 49, item 1): each leases its whole range, root blocks included, checked against every live one.
 */
class UidLeaseTest {
    private static final long SIZE = UidLayout.SIZE;

    /** Another process holds the claim of the block at {@code base}: an flock on its file, as a lease takes. */
    private static Process holder(Path dir, long base) throws Exception {
        Path file = dir.resolve("uids-" + base + "-" + (base + SIZE - 1) + ".lock");
        Process p = new ProcessBuilder("/usr/bin/python3", "-c", "import fcntl, os, sys, time\n"
                + "f = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\nf.truncate(0)\n"
                + "f.write(str(os.getpid()) + '\\n')\nf.flush()\nprint('held', flush=True)\ntime.sleep(60)\n",
                file.toString()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).isEqualTo("held");
        return p;
    }

    private static boolean overlap(UidLease a, UidLease b) {
        List<UidLayout.Range> x = new UidLayout(a.base(), 1).claimed();
        return new UidLayout(b.base(), 1).claimed().stream().anyMatch(r -> x.stream().anyMatch(r::overlaps));
    }

    @Test
    void aSecondProcessTakesTheNextBlockAndSaysWhoHoldsTheFirst(@TempDir Path dir) throws Exception {
        Process other = holder(dir, 61000);
        try (UidLease lease = UidLease.acquire(dir, 61000)) {
            assertThat(lease.base()).isEqualTo(61000 + SIZE);
            assertThat(lease.skipped()).singleElement().asString()
                    .contains("61000.." + (61000 + SIZE - 1)).contains("pid " + other.pid());
        } finally {
            other.destroyForcibly();
            other.waitFor();
        }
    }

    /** Bases one apart used to give two servers the same session uids and root blocks. */
    @Test
    void leasesWhoseBasesAreOneApartNeverOverlap(@TempDir Path dir) {
        try (UidLease first = UidLease.acquire(dir, 20000); UidLease second = UidLease.acquire(dir, 20001)) {
            assertThat(overlap(first, second)).as("%d and %d", first.base(), second.base()).isFalse();
            assertThat(second.base()).isEqualTo(20000 + SIZE);
            assertThat(second.skipped()).singleElement().asString().contains("20000.." + (20000 + SIZE - 1));
        }
        try (UidLease below = UidLease.acquire(dir, 20001); UidLease above = UidLease.acquire(dir, 20000)) {
            assertThat(overlap(below, above)).as("%d and %d", below.base(), above.base()).isFalse();
        }
    }

    /** A block that lies inside another's root blocks is another's uids too. */
    @Test
    void aBlockInsideAnotherLeasesRootBlocksIsAnOverlap(@TempDir Path dir) {
        long insideRoots = UidLayout.rootUid(20000 + 5);
        try (UidLease high = UidLease.acquire(dir, insideRoots); UidLease low = UidLease.acquire(dir, 20000)) {
            assertThat(high.base()).isEqualTo(insideRoots);
            assertThat(overlap(high, low)).as("%d and %d", high.base(), low.base()).isFalse();
            assertThat(low.base()).isEqualTo(20000 + SIZE);
        }
    }

    @Test
    void theBlockIsFreeAgainOnceItsHolderDiesEvenByKillDashNine(@TempDir Path dir) throws Exception {
        Process other = holder(dir, 61000);
        other.destroyForcibly();
        assertThat(other.waitFor(10, TimeUnit.SECONDS)).isTrue();
        try (UidLease lease = UidLease.acquire(dir, 61000)) {
            assertThat(lease.base()).isEqualTo(61000);
            assertThat(lease.skipped()).isEmpty();
        }
    }

    @Test
    void twoLaunchersInOneJvmGetDifferentBlocksAndGiveThemBack(@TempDir Path dir) {
        try (UidLease first = UidLease.acquire(dir, 70000); UidLease second = UidLease.acquire(dir, 70000)) {
            assertThat(List.of(first.base(), second.base())).containsExactly(70000L, 70000 + SIZE);
        }
        try (UidLease again = UidLease.acquire(dir, 70000)) {
            assertThat(again.base()).isEqualTo(70000);
        }
    }

    @Test
    void whenEveryRangeTriedIsTakenTheErrorNamesThemAndSaysHowToGoOn(@TempDir Path dir) {
        List<UidLease> all = new ArrayList<>();
        try {
            for (int i = 0; i < UidLease.BLOCKS; i++) {
                all.add(UidLease.acquire(dir, 70000));
            }
            assertThatThrownBy(() -> UidLease.acquire(dir, 70000)).isInstanceOf(SandboxUnavailableException.class)
                    .hasMessageContaining("CRUCIBLE_SLOT_UID_BASE").hasMessageContaining("70000.." + (70000 + SIZE - 1))
                    .hasMessageContaining("pid " + ProcessHandle.current().pid());
        } finally {
            all.forEach(UidLease::close);
        }
    }

    private static long hostUidOf(String cmdline) throws Exception {
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    if (Files.readString(p.resolve("cmdline")).equals(cmdline)) {
                        return (Integer) Files.getAttribute(p, "unix:uid");
                    }
                } catch (Exception e) {
                    // not ours, or gone
                }
            }
        }
        return -1;
    }

    /** Two real launchers at once, the second asking for a base inside the first's range: each keeps to its own. */
    @Test
    void twoRunningLaunchersNeverShareASandboxUid() throws Exception {
        Capability.ROOT.require(); // only root runs sandboxes as per-slot uids
        try (Sandbox a = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2))) {
            SandboxConfig inside = SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE",
                    Integer.toString(a.host().uidBase() + 1))).withSlots(2);
            try (Sandbox b = BwrapSandbox.create(inside)) {
                assertThat(Math.abs(a.host().uidBase() - b.host().uidBase())).isGreaterThanOrEqualTo(UidLayout.SIZE);
                Path file = UidLease.DIRECTORY.resolve("uids-" + a.host().uidBase() + "-"
                        + (a.host().uidBase() + SIZE - 1) + ".lock");
                assertThat(Files.readString(file).strip()).isEqualTo(Long.toString(ProcessHandle.current().pid()));
                for (Sandbox s : List.of(a, b)) {
                    assertThat(sleepersUid(s)).as("host uid of the sandboxed sleep")
                            .isBetween((long) s.host().uidBase(), s.host().uidBase() + 1L);
                }
            }
        }
    }

    private static long sleepersUid(Sandbox s) throws Exception {
        String marker = "7." + s.host().uidBase(); // a sleep this long is ours
        Thread run = Thread.ofPlatform().start(() -> {
            try {
                s.run(SandboxSpec.of(List.of("/usr/bin/sleep", marker), Limits.DEFAULT));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            return await("the sandboxed sleep seen in /proc").atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> hostUidOf("/usr/bin/sleep\0" + marker + "\0"), u -> u >= 0);
        } finally {
            s.killRunning();
            run.join();
        }
    }
}
