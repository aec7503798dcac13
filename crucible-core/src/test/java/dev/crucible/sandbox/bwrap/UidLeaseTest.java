package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.SandboxUnavailableException;
import dev.crucible.testhost.Capability;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two Crucible processes on one host never run sandboxes as the same uid (issue 10, class 8). */
class UidLeaseTest {

    /** Another process (python's lockf: the same fcntl lock the JVM takes) holds the first block. */
    private static Process holder(Path lockFile) throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", "-c", "import fcntl, os, sys, time\n"
                + "f = open(sys.argv[1], 'a+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nf.truncate(0)\n"
                + "f.write(str(os.getpid()) + '\\n')\nf.flush()\nprint('held', flush=True)\ntime.sleep(60)\n",
                lockFile.toString()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).isEqualTo("held");
        return p;
    }

    @Test
    void aSecondProcessTakesTheNextBlockAndSaysWhoHoldsTheFirst(@TempDir Path dir) throws Exception {
        Process other = holder(dir.resolve("uids-61000.lock"));
        try (UidLease lease = UidLease.acquire(dir, 61000)) {
            assertThat(lease.base()).isEqualTo(61000 + UidLease.BLOCK);
            assertThat(lease.skipped()).singleElement().asString()
                    .contains("61000..64999").contains("pid " + other.pid());
        } finally {
            other.destroyForcibly();
            other.waitFor();
        }
    }

    @Test
    void theBlockIsFreeAgainOnceItsHolderDiesEvenByKillDashNine(@TempDir Path dir) throws Exception {
        Process other = holder(dir.resolve("uids-61000.lock"));
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
            assertThat(List.of(first.base(), second.base())).containsExactly(70000, 70000 + UidLease.BLOCK);
        }
        try (UidLease again = UidLease.acquire(dir, 70000)) {
            assertThat(again.base()).isEqualTo(70000);
        }
    }

    @Test
    void whenEveryBlockIsTakenTheErrorSaysHowToGoOn(@TempDir Path dir) {
        List<UidLease> all = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < UidLease.BLOCKS; i++) {
                all.add(UidLease.acquire(dir, 70000));
            }
            assertThatThrownBy(() -> UidLease.acquire(dir, 70000)).isInstanceOf(SandboxUnavailableException.class)
                    .hasMessageContaining("CRUCIBLE_SLOT_UID_BASE");
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

    /** Two real launchers at once: each runs its sandboxes as uids of its own block. */
    @Test
    void twoRunningLaunchersNeverShareASandboxUid() throws Exception {
        Capability.ROOT.require(); // only root runs sandboxes as per-slot uids
        try (Sandbox a = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2));
                Sandbox b = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2))) {
            assertThat(Math.abs(a.host().uidBase() - b.host().uidBase())).isGreaterThanOrEqualTo(UidLease.BLOCK);
            assertThat(Files.readString(UidLease.DIRECTORY.resolve("uids-" + a.host().uidBase() + ".lock")).strip())
                    .isEqualTo(Long.toString(ProcessHandle.current().pid()));
            for (Sandbox s : List.of(a, b)) {
                String marker = "7." + s.host().uidBase(); // a sleep this long is ours
                Thread run = Thread.ofPlatform().start(() -> {
                    try {
                        s.run(SandboxSpec.of(List.of("/usr/bin/sleep", marker), Limits.DEFAULT));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                long uid;
                try {
                    uid = await("the sandboxed sleep seen in /proc").atMost(Duration.ofSeconds(10))
                            .pollInterval(Duration.ofMillis(20))
                            .until(() -> hostUidOf("/usr/bin/sleep\0" + marker + "\0"), u -> u >= 0);
                } finally {
                    s.killRunning();
                    run.join();
                }
                assertThat(uid).as("host uid of the sandboxed sleep").isBetween((long) s.host().uidBase(), s.host().uidBase() + 1L);
            }
        }
    }
}
