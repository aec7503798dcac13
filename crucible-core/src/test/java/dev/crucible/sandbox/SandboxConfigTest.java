package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** defaults() is the built-in settings with the environment's, for the command and an embedding program alike. */
class SandboxConfigTest {
    @Test
    void theEnvironmentChangesOnlyWhatItNames() {
        SandboxConfig plain = SandboxConfig.fromEnvironment(Map.of());
        assertThat(plain).isEqualTo(SandboxConfig.builtIn());
        SandboxConfig set = SandboxConfig.fromEnvironment(Map.of("CRUCIBLE_SLOT_UID_BASE", " 62000 ",
                "CRUCIBLE_LAUNCHER", "sh", "CRUCIBLE_CGROUP_FAVORDYNMODS", "0"));
        assertThat(set.slotUidBase()).isEqualTo(62000);
        assertThat(set.launchHelper()).isFalse();
        assertThat(set.tuneCgroups()).isFalse();
        assertThat(set.withSlots(3)).isEqualTo(new SandboxConfig(set.workParent(), 3, 62000, set.fileSizeBytes(),
                set.openFiles(), set.tmpfsBytes(), false, set.selfTest(), false, set.zygote(), null, null, null));
    }

    /** What an embedding program's {@code SandboxConfig.defaults()} gives, printed by a JVM of its own. */
    public static final class Embedded {
        public static void main(String[] args) {
            SandboxConfig c = SandboxConfig.defaults();
            System.out.println(c.slotUidBase() + " " + c.launchHelper() + " " + c.zygote() + " " + c.tuneCgroups() + " "
                    + c.isolation().wire() + " " + c.runscPlatform() + " " + SandboxConfig.builtIn().slotUidBase());
        }
    }

    private static String embedded(Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                System.getProperty("java.class.path"), Embedded.class.getName()).redirectErrorStream(true);
        pb.environment().keySet().removeIf(name -> name.startsWith("CRUCIBLE_"));
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(out).isZero();
        return out.strip();
    }

    /** An engine embedded in Java reads the variables crucible reads: the uid block of its host's CLI, not 61000. */
    @Test
    void anEmbeddedEnginesDefaultsReadTheVariablesTheCommandReads() throws Exception {
        assertThat(embedded(Map.of("CRUCIBLE_SLOT_UID_BASE", "64000", "CRUCIBLE_LAUNCHER", "sh", "CRUCIBLE_ZYGOTE", "0",
                "CRUCIBLE_CGROUP_FAVORDYNMODS", "0", "CRUCIBLE_ISOLATION", "gvisor", "CRUCIBLE_RUNSC_PLATFORM", "ptrace")))
                .isEqualTo("64000 false false false gvisor ptrace 61000");
        assertThat(embedded(Map.of())).isEqualTo("61000 true true true namespaces null 61000");
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
        List<String> remounted = new ArrayList<>(mountinfo);
        remounted.add("5 2 0:5 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw");
        assertThat(SandboxConfig.noexec(remounted, Path.of("/dev/shm"))).isFalse();
    }
}
