package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
                set.openFiles(), set.tmpfsBytes(), false, set.selfTest(), false));
    }

    @Test
    void aMalformedOrSystemUidBaseIsRefusedWithWhatToSet() {
        assertThatThrownBy(() -> SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE", "lots")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CRUCIBLE_SLOT_UID_BASE");
        assertThatThrownBy(() -> SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE", "0")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("system uids");
    }
}
