package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The environment is read by the CLI through fromEnvironment, never by defaults(). */
class SandboxConfigTest {
    @Test
    void theEnvironmentChangesOnlyWhatItNames() {
        SandboxConfig plain = SandboxConfig.fromEnvironment(Map.of());
        assertThat(plain).isEqualTo(SandboxConfig.defaults());
        SandboxConfig set = SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE", " 62000 ",
                "CRUCIBLE_LAUNCHER", "sh", "CRUCIBLE_CGROUP_FAVORDYNMODS", "0"));
        assertThat(set.slotUidBase()).isEqualTo(62000);
        assertThat(set.launchHelper()).isFalse();
        assertThat(set.tuneCgroups()).isFalse();
        assertThat(set.withSlots(3)).isEqualTo(new SandboxConfig(set.workParent(), 3, 62000, set.fileSizeBytes(),
                set.openFiles(), set.tmpfsBytes(), false, set.selfTest(), false, set.zygote(), null, null, null));
    }

    @Test
    void aMalformedOrSystemUidBaseIsRefusedWithWhatToSet() {
        assertThatThrownBy(() -> SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE", "lots")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CRUCIBLE_SLOT_UID_BASE");
        assertThatThrownBy(() -> SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE", "0")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("system uids");
    }

    /** Container engines mount /dev/shm noexec: the work directory (the launch helper runs from it) goes elsewhere. */
    @Test
    void aNoexecMountIsFoundByTheLongestMountPointAbove() {
        List<String> mountinfo = List.of(
                "1 0 0:1 / / rw,relatime - overlay overlay rw",
                "2 1 0:2 / /dev rw,nosuid - tmpfs tmpfs rw",
                "3 2 0:3 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k",
                "4 1 0:4 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw");
        assertThat(SandboxConfig.noexec(mountinfo, Path.of("/dev/shm"))).isTrue();
        assertThat(SandboxConfig.noexec(mountinfo, Path.of("/dev/shm/crucible-1"))).isTrue();
        assertThat(SandboxConfig.noexec(mountinfo, Path.of("/dev/shmem"))).isFalse();
        assertThat(SandboxConfig.noexec(mountinfo, Path.of("/tmp"))).isFalse();
        // a later mount over the same point wins
        List<String> remounted = new java.util.ArrayList<>(mountinfo);
        remounted.add("5 2 0:5 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw");
        assertThat(SandboxConfig.noexec(remounted, Path.of("/dev/shm"))).isFalse();
    }
}
