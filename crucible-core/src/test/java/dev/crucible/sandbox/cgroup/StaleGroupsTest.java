package dev.crucible.sandbox.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Run groups left by a Crucible process that was killed (kill -9) are removed when the next one starts. */
class StaleGroupsTest {
    @Test
    void emptyGroupsOfDeadProcessesAreRemovedAtStart() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUP_V1.require(cgroups instanceof CgroupV1 ? null : cgroups.describe());
        Path parent = ((CgroupV1) cgroups).pids();
        Path stale = Files.createDirectory(parent.resolve("run-999999999-dead0000000000000000")); // pid > pid_max
        Path alive = Files.createDirectory(parent.resolve("run-" + ProcessHandle.current().pid() + "-live0000000000"));
        try {
            try (Sandbox sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(1))) {
                // the start-up self-test's own group goes in the background
                assertThat(sandbox.awaitIdle(Duration.ofSeconds(10))).isTrue();
                assertThat(sandbox.host().liveRunGroups()).isZero();
            }
            assertThat(Files.exists(stale)).isFalse();
            assertThat(Files.exists(alive)).as("a live process's group is left alone").isTrue();
        } finally {
            Files.deleteIfExists(stale);
            Files.deleteIfExists(alive);
        }
    }

    @Test
    void whatIsStillInAStaleGroupIsKilledFirst() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUP_V1.require(cgroups instanceof CgroupV1 ? null : cgroups.describe());
        Path stale = Files.createDirectory(((CgroupV1) cgroups).pids().resolve("run-999999998-orphan00000000000000"));
        // a stand-in for bubblewrap's init left blocked by a server killed in the middle of a launch
        Process orphan = new ProcessBuilder("/usr/bin/sleep", "300").start();
        try {
            Files.writeString(stale.resolve("cgroup.procs"), Long.toString(orphan.pid()));
            try (Sandbox sandbox = BwrapSandbox.create(SandboxConfig.defaults().withSlots(1))) {
                assertThat(sandbox.awaitIdle(Duration.ofSeconds(10))).isTrue();
            }
            assertThat(orphan.waitFor(5, TimeUnit.SECONDS)).as("the orphan was killed").isTrue();
            assertThat(Files.exists(stale)).isFalse();
        } finally {
            orphan.destroyForcibly();
            orphan.waitFor();
            Files.deleteIfExists(stale);
        }
    }
}
