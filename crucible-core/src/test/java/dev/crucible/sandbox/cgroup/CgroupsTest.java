package dev.crucible.sandbox.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.sandbox.Limits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cgroup drivers' parts that can be checked without starting a sandbox. */
class CgroupsTest {

    @Test
    void procSelfCgroupAndMountinfoAreParsedForBothVersions() {
        var own = CgroupMounts.ownGroups(List.of("4:memory:/a/b", "2:cpu,cpuacct:/", "0::/user.slice/x"));
        assertThat(own).containsEntry("memory", "/a/b").containsEntry("cpuacct", "/").containsEntry("", "/user.slice/x");
        List<String> mountinfo = List.of(
                "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory",
                "31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct",
                "32 25 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate");
        assertThat(CgroupMounts.groupDirectory(mountinfo, "cgroup", "memory", "/a/b")).isEqualTo(Path.of("/sys/fs/cgroup/memory/a/b"));
        assertThat(CgroupMounts.groupDirectory(mountinfo, "cgroup", "cpuacct", "/")).isEqualTo(Path.of("/sys/fs/cgroup/cpu,cpuacct"));
        assertThat(CgroupMounts.groupDirectory(mountinfo, "cgroup2", null, "/user.slice/x"))
                .isEqualTo(Path.of("/sys/fs/cgroup/user.slice/x"));
        assertThat(CgroupMounts.groupDirectory(mountinfo, "cgroup", "pids", "/")).isNull();
    }

    /**
     * In a container on cgroup v1 the engine binds the container's own group read-only; a writable bind of its parent
     * over it (deploy/podman) is the mount that is visible there, so the group is resolved against that one.
     */
    @Test
    void aLaterMountOnTheSameMountPointHidesTheEarlierOne() {
        List<String> mountinfo = List.of(
                "170 166 0:32 /p/libpod-1 /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory",
                "171 166 0:33 /p/libpod-1 /mnt/elsewhere ro - cgroup cgroup rw,memory",
                "178 170 0:32 /p /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory");
        assertThat(CgroupMounts.groupDirectory(mountinfo, "cgroup", "memory", "/p/libpod-1"))
                .isEqualTo(Path.of("/sys/fs/cgroup/memory/libpod-1"));
    }

    /**
     * cgroup v2 cannot be mounted usefully on this cgroup-v1 machine, so its driver is checked against a directory
     * laid out like a delegated v2 group: the files it writes and the counters it reads.
     */
    @Test
    void cgroupV2WritesLimitsAndReadsCountersInTheV2Formats(@TempDir Path own) throws Exception {
        Files.writeString(own.resolve("cgroup.procs"), "");
        Files.writeString(own.resolve("cgroup.subtree_control"), "");
        CgroupV2 v2 = CgroupV2.prepare(own);
        assertThat(Files.readString(own.resolve("cgroup.subtree_control"))).isEqualTo("+memory +pids +cpu");
        assertThat(Files.readString(own.resolve("crucible/cgroup.subtree_control"))).isEqualTo("+memory +pids +cpu");

        Cgroups.RunGroup run = v2.create("run-1", new Limits(1000, 1000, 128, 1024, 32));
        Path dir = own.resolve("crucible/run-1");
        assertThat(Files.readString(dir.resolve("memory.max"))).isEqualTo(Long.toString(128L << 20));
        assertThat(Files.readString(dir.resolve("pids.max"))).isEqualTo("32");
        assertThat(Files.readString(dir.resolve("cpu.max"))).isEqualTo("100000 100000");
        assertThat(run.procsFiles()).containsExactly(dir.resolve("cgroup.procs"));

        Files.writeString(dir.resolve("memory.events"), "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\n");
        Files.writeString(dir.resolve("cpu.stat"), "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
        Files.writeString(dir.resolve("memory.peak"), "8675309\n");
        Files.writeString(dir.resolve("cgroup.procs"), "42\n43\n");
        assertThat(run.oomKills()).isEqualTo(1);
        assertThat(run.cpuNanos()).isEqualTo(1_234_567_000L);
        assertThat(run.memoryPeakBytes()).isEqualTo(8_675_309L);
        assertThat(run.pids()).containsExactly(42L, 43L);
        assertThat(v2.liveGroups("run-")).isEqualTo(1);
    }

    /** The sessions' group on v2: its subtree delegated, its memory held to the budget, no swap, its CPU weight. */
    @Test
    void aNestedV2GroupHoldsItsGroupsToOneBudget(@TempDir Path own) throws Exception {
        Files.writeString(own.resolve("cgroup.procs"), "");
        Files.writeString(own.resolve("cgroup.subtree_control"), "");
        CgroupV2 v2 = CgroupV2.prepare(own);
        Path dir = own.resolve("crucible/run-1-sessionsab");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("memory.swap.max"), "max");
        Cgroups sessions = v2.nested("run-1-sessionsab", 512L << 20, 4);
        assertThat(Files.readString(dir.resolve("memory.max"))).isEqualTo(Long.toString(512L << 20));
        assertThat(Files.readString(dir.resolve("memory.swap.max"))).isEqualTo("0");
        assertThat(Files.readString(dir.resolve("cgroup.subtree_control"))).isEqualTo("+memory +pids +cpu");
        assertThat(Files.readString(dir.resolve("cpu.weight"))).isEqualTo("400");
        sessions.create("run-1-abs1", new Limits(1000, 1000, 256, 1024, 32));
        assertThat(Files.readString(dir.resolve("run-1-abs1/memory.max"))).isEqualTo(Long.toString(256L << 20));
        Files.writeString(dir.resolve("memory.current"), "12345\n");
        assertThat(sessions.memoryUsedBytes()).isEqualTo(12345);
        assertThat(sessions.liveGroups("run-1-ab")).isEqualTo(1);
        assertThat(v2.liveGroups("run-1-ab")).as("the sessions' group is no run's").isZero();
    }
}
