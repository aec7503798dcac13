package dev.crucible.sandbox.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.sandbox.Limits;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The groups a killed server leaves behind, on this host's real cgroups: its sessions' group and the sessions'
 * groups nested in it are emptied (what still runs there is killed) and removed by the next start's sweep, the
 * nested ones first.
 */
class CgroupStaleTest {
    @Test
    void theGroupsOfAProcessThatIsGoneAreSweptTheNestedOnesFirst() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUPS.require(cgroups instanceof Cgroups.None none ? none.reason() : null);
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        String prefix = "run-" + gone.pid() + "-";
        Cgroups sessions = cgroups.nested(prefix + "sessionsab", 64L << 20, 1);
        Cgroups.RunGroup session = sessions.create(prefix + "abs1", Limits.DEFAULT);
        Process left = new ProcessBuilder("sleep", "600").start(); // what a killed server's session left running
        for (Path procs : session.procsFiles()) {
            Files.writeString(procs, Long.toString(left.pid()));
        }
        assertThat(sessions.liveGroups(prefix)).isEqualTo(1);

        cgroups.removeStale();

        assertThat(left.waitFor(10, TimeUnit.SECONDS)).as("what ran in the stale group was killed").isTrue();
        assertThat(sessions.liveGroups(prefix)).isZero();
        assertThat(cgroups.liveGroups(prefix)).as("the sessions' group removed after its groups").isZero();
    }
}
