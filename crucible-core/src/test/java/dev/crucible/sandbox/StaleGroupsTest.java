package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Run groups left by a Crucible process that was killed (kill -9) are removed when the next one starts. */
class StaleGroupsTest {
    @Test
    void emptyGroupsOfDeadProcessesAreRemovedAtStart() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Assumptions.assumeTrue(cgroups instanceof CgroupV1, "needs the writable cgroup v1 of this machine: " + cgroups.describe());
        Path parent = ((CgroupV1) cgroups).pids();
        Path stale = Files.createDirectory(parent.resolve("run-999999999-dead0000000000000000")); // pid > pid_max
        Path alive = Files.createDirectory(parent.resolve("run-" + ProcessHandle.current().pid() + "-live0000000000"));
        try {
            try (Sandbox sandbox = Sandbox.create(SandboxConfig.defaults().withSlots(1))) {
                // the start-up self-test's own group goes in the background
                assertThat(sandbox.awaitIdle(java.time.Duration.ofSeconds(10))).isTrue();
                assertThat(sandbox.liveRunGroups()).isZero();
            }
            assertThat(Files.exists(stale)).isFalse();
            assertThat(Files.exists(alive)).as("a live process's group is left alone").isTrue();
        } finally {
            Files.deleteIfExists(stale);
            Files.deleteIfExists(alive);
        }
    }
}
