package dev.crucible.sandbox.cgroup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A run's sandbox weighs the CPU share its caller's turn was given ({@link CpuShare}), read back from the real cgroup
 * of the running program on the host, and the slot's next run weighs a whole run's again.
 */
class CpuShareTest {
    final Executor executor = TestHost.crucible().executor();

    @AfterEach
    void nothingLeft() throws Exception {
        TestHost.assertNothingLeft();
    }

    @Test
    void aRunWeighsItsCallersShareAndTheNextRunAWholeOnes() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUPS.require(cgroups instanceof Cgroups.None ? cgroups.describe() : null);
        boolean v1 = cgroups instanceof CgroupV1;

        assertThat(weightOfARunAt(25)).isEqualTo(v1 ? "256" : "25");
        assertThat(weightOfARunAt(null)).as("a slot's groups used again are a whole run's").isEqualTo(v1 ? "1024" : "100");
        assertThat(weightOfARunAt(0)).as("clamped to the background's").isEqualTo(v1 ? "2" : "1");
    }

    /**
     * A run's weight follows its share while it runs: its token's turns change as another token's runs start and end
     * (FairTurns), and the run's group is weighed again within a poll of the change.
     */
    @Test
    void aRunsWeightFollowsItsShareWhileItRuns() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUPS.require(cgroups instanceof Cgroups.None ? cgroups.describe() : null);
        boolean v1 = cgroups instanceof CgroupV1;
        AtomicInteger share = new AtomicInteger(CpuShare.NORMAL);
        String marker = "8." + ThreadLocalRandom.current().nextInt(100_000, 999_999);
        CompletableFuture<ExecuteResult> run = runUnder(share::get, marker);
        try {
            long pid = await().atMost(Duration.ofSeconds(60)).until(() -> sleeperPid(marker), p -> p > 0);
            Path weight = cpuGroupOf(pid).resolve(cgroupsFile());
            assertThat(Files.readString(weight).strip()).isEqualTo(v1 ? "1024" : "100");
            share.set(50);
            await().atMost(Duration.ofSeconds(30)).until(() -> Files.readString(weight).strip(),
                    w -> w.equals(v1 ? "512" : "50"));
            share.set(CpuShare.NORMAL);
            await().atMost(Duration.ofSeconds(30)).until(() -> Files.readString(weight).strip(),
                    w -> w.equals(v1 ? "1024" : "100"));
        } finally {
            ProcessHandle.of(sleeperPid(marker)).ifPresent(ProcessHandle::destroyForcibly);
            run.join();
        }
    }

    /** A run of {@code sleep <marker>} launched on a thread whose share is {@code share}. */
    private CompletableFuture<ExecuteResult> runUnder(IntSupplier share, String marker) {
        return CompletableFuture.supplyAsync(() -> {
            try (CpuShare.Scope scope = CpuShare.set(share)) {
                return executor.execute(ExecuteRequest.of("python",
                        "import os\nos.execv('/usr/bin/sleep', ['sleep', '" + marker + "'])"));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** The CPU weight of a run's cgroup while it runs, launched under {@code share} (none when null). */
    private String weightOfARunAt(Integer share) throws Exception {
        String marker = "7." + ThreadLocalRandom.current().nextInt(100_000, 999_999);
        CompletableFuture<ExecuteResult> run = runUnder(() -> share == null ? CpuShare.NORMAL : share, marker);
        try {
            long pid = await().atMost(Duration.ofSeconds(60)).until(() -> sleeperPid(marker), p -> p > 0);
            return Files.readString(cpuGroupOf(pid).resolve(cgroupsFile())).strip();
        } finally {
            ProcessHandle.of(sleeperPid(marker)).ifPresent(ProcessHandle::destroyForcibly);
            run.join();
        }
    }

    private static String cgroupsFile() {
        return Cgroups.detect() instanceof CgroupV1 ? "cpu.shares" : "cpu.weight";
    }

    /** The host pid of the process whose command line is {@code sleep <marker>}, or -1. */
    private static long sleeperPid(String marker) {
        byte[] wanted = ("sleep\0" + marker + "\0").getBytes(StandardCharsets.UTF_8);
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            return procs.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit)).filter(p -> {
                try {
                    return Arrays.equals(Files.readAllBytes(p.resolve("cmdline")), wanted);
                } catch (IOException e) {
                    return false; // gone meanwhile
                }
            }).mapToLong(p -> Long.parseLong(p.getFileName().toString())).findFirst().orElse(-1);
        } catch (IOException e) {
            return -1;
        }
    }

    /** The directory of {@code pid}'s cpu cgroup (v1) or its one group (v2) on the host. */
    private static Path cpuGroupOf(long pid) throws IOException {
        Map<String, String> own = CgroupMounts.ownGroups(Files.readAllLines(Path.of("/proc/" + pid + "/cgroup")));
        List<String> mountinfo = Files.readAllLines(Path.of("/proc/self/mountinfo"));
        Path dir = own.containsKey("cpu") ? CgroupMounts.groupDirectory(mountinfo, "cgroup", "cpu", own.get("cpu"))
                : CgroupMounts.groupDirectory(mountinfo, "cgroup2", null, own.get(""));
        assertThat(dir).as("the cpu group of " + pid + " in " + own).isNotNull();
        return dir;
    }
}
