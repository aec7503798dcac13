package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.CgroupV1;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.zygote.ZygoteTest;
import dev.crucible.testhost.Capability;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A slot's cgroups serve its runs one after another where the host allows it (cgroup v1): each run is measured as if
 * its groups were new. One slot, so that every run here lands in the same groups.
 */
class CgroupReuseTest {
    static BwrapSandbox sandbox;

    @BeforeAll
    static void start() {
        sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(1));
    }

    @AfterAll
    static void stop() {
        sandbox.close();
    }

    static SandboxResult run(String code, int memoryMb) throws Exception {
        Limits limits = new Limits(10_000, 10_000, memoryMb, 1 << 20, 64);
        SandboxSpec spec = ZygoteTest.poolSpec(limits, Map.of());
        SandboxResult r = sandbox.launch(spec, false).complete(WarmPool.payload(code, List.of(), ""), limits,
                OutputListener.NONE);
        assertThat(sandbox.awaitIdle(Duration.ofSeconds(10))).as("the slot came back").isTrue();
        return r;
    }

    static final String HOG = "x = []\nwhile True: x.append(bytearray(8 << 20))";

    @Test
    void aRunAfterAnOutOfMemoryKillIsNotReportedAsOne() throws Exception {
        SandboxResult killed = run(HOG, 64);
        assertThat(killed.oomKilled()).as("the hog is killed by the memory cgroup").isTrue();
        SandboxResult next = run("print('fine')", 64);
        assertThat(new String(next.stdout(), StandardCharsets.UTF_8)).isEqualTo("fine\n");
        assertThat(next.oomKilled()).as("the OOM kill was the earlier run's").isFalse();
        assertThat(next.memoryBytes()).as("its own peak, not the hog's").isBetween(1L, 32L << 20);
    }

    @Test
    void aRunReportsItsOwnPeakNotAnEarlierOnes() throws Exception {
        SandboxResult big = run("x = bytearray(120 << 20)\nx[::4096] = b'y' * len(x[::4096])\nprint('big')", 256);
        assertThat(new String(big.stdout(), StandardCharsets.UTF_8)).isEqualTo("big\n");
        assertThat(big.memoryBytes()).isGreaterThan(100L << 20);
        SandboxResult small = run("print('small')", 256);
        assertThat(small.memoryBytes()).isBetween(1L, 32L << 20);
    }

    /** The memory limit follows each run's own, up and down (v1's swap limit may never be below the memory limit). */
    @Test
    void theMemoryLimitIsEachRunsOwnUpAndDown() throws Exception {
        String use150 = "x = bytearray(150 << 20)\nx[::4096] = b'y' * len(x[::4096])\nprint('held')";
        assertThat(run(use150, 64).oomKilled()).isTrue();
        SandboxResult raised = run(use150, 256);
        assertThat(new String(raised.stdout(), StandardCharsets.UTF_8)).as(raised.sandboxError()).isEqualTo("held\n");
        assertThat(run(use150, 64).oomKilled()).as("lowered again").isTrue();
        SandboxResult again = run(use150, 512);
        assertThat(new String(again.stdout(), StandardCharsets.UTF_8)).as(again.sandboxError()).isEqualTo("held\n");
    }

    /**
     * A run that read much from disk leaves that page cache charged to its groups; the next run's peak must not be
     * short by it (the kernel reclaims it under the next run's limit): such groups are not used again.
     */
    @Test
    void aRunAfterOneThatReadMuchReportsItsWholePeak(@TempDir Path dir) throws Exception {
        Path big = dir.resolve("big.bin");
        try (var out = FileChannel.open(big, StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            byte[] chunk = new byte[1 << 20];
            for (int i = 0; i < 64; i++) {
                Arrays.fill(chunk, (byte) i);
                out.write(ByteBuffer.wrap(chunk));
            }
            out.force(true); // clean pages: only those can be dropped from the cache
        }
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.setPosixFilePermissions(big, PosixFilePermissions.fromString("rw-r--r--"));
        // out of the page cache, so that the run's read charges it to the run's memory group
        Process drop = new ProcessBuilder("dd", "if=" + big, "iflag=nocache", "count=0", "status=none").start();
        assertThat(drop.waitFor()).isZero();
        Limits limits = new Limits(10_000, 10_000, 256, 1 << 20, 64);
        SandboxSpec reader = ZygoteTest.poolSpec(limits, Map.of("/data/big.bin", big));
        SandboxResult read = sandbox.launch(reader, false).complete(WarmPool.payload(
                "print(len(open('/data/big.bin', 'rb').read()) >> 20)", List.of(), ""), limits, OutputListener.NONE);
        assertThat(new String(read.stdout(), StandardCharsets.UTF_8)).as(read.sandboxError()).isEqualTo("64\n");
        assertThat(sandbox.awaitIdle(Duration.ofSeconds(10))).isTrue();
        SandboxResult hog = run(HOG, 128);
        assertThat(hog.oomKilled()).isTrue();
        assertThat(hog.memoryBytes()).as("the hog's whole peak, not less the earlier run's page cache")
                .isGreaterThan(100L << 20);
    }

    /** On cgroup v1 the slot keeps one set of groups across runs (no mkdir and rmdir per run). */
    @Test
    void theSlotKeepsItsGroupsAcrossRuns() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUP_V1.require(cgroups instanceof CgroupV1 ? null
                : "cgroup v2 here; its groups are made afresh for every run (no reuse)");
        CgroupV1 v1 = (CgroupV1) cgroups;
        run("pass", 64);
        Set<String> before = groups(v1.memory());
        for (int i = 0; i < 5; i++) {
            run("print(" + i + ")", 64);
        }
        assertThat(groups(v1.memory())).isEqualTo(before).hasSize(1);
    }

    private static Set<String> groups(Path parent) throws Exception {
        String prefix = sandbox.groupPrefix(); // this launcher's: other launchers of this JVM have their own
        try (var children = Files.list(parent)) {
            return new TreeSet<>(children.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix))
                    .toList());
        }
    }
}
