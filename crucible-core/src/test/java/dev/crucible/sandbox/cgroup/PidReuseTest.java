package dev.crucible.sandbox.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.os.Processes;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Issue 10, class 7: a pid read from {@code cgroup.procs} (or found as a descendant) may be reused by another
 * process before it is signalled. Every kill path pins the process with a pidfd, then checks it is still the one
 * meant, so the pid's next owner is never hit.
 */
class PidReuseTest {
    static Process sleeper() throws Exception {
        return new ProcessBuilder("/usr/bin/sleep", "300").start();
    }

    @Test
    void aPidThatNowBelongsToAProcessOutsideTheGroupIsNeverKilled() throws Exception {
        Cgroups cgroups = Cgroups.detect();
        Capability.CGROUPS.require(cgroups instanceof Cgroups.None ? cgroups.describe() : null);
        String name = "run-" + ProcessHandle.current().pid() + "-pidreuse" + System.nanoTime();
        Cgroups.RunGroup group = cgroups.prepare(name);
        Process member = sleeper();
        Process outsider = sleeper(); // stands for the process that got a member's pid after it ended
        try {
            for (var procs : group.procsFiles()) {
                Files.writeString(procs, Long.toString(member.pid()));
            }
            assertThat(group.holds(member.pid())).isTrue();
            assertThat(group.holds(outsider.pid())).isFalse();

            // a stale list, as read from cgroup.procs before the member's pid was reused
            CgroupFiles.killMembers(List.of(outsider.pid(), member.pid()), name);

            assertThat(member.waitFor(5, TimeUnit.SECONDS)).as("the member was killed").isTrue();
            assertThat(outsider.isAlive()).as("the pid's new owner outside the group").isTrue();
        } finally {
            member.destroyForcibly().waitFor();
            outsider.destroyForcibly().waitFor();
            group.destroy();
        }
    }

    @Test
    void aSignalReachesOnlyTheProcessThePidfdPinned() throws Exception {
        Process p = sleeper();
        try {
            assertThat(Processes.signalIf(p.pid(), 9, pid -> false)).as("the check said it is not ours").isFalse();
            assertThat(p.isAlive()).isTrue();
            assertThat(Processes.signalIf(p.pid(), 9, pid -> pid == p.pid())).isTrue();
            assertThat(p.waitFor(5, TimeUnit.SECONDS)).isTrue();
            // reaped: the pid names nothing (or someone else, whom the check refuses)
            assertThat(Processes.signalIf(p.pid(), 9, pid -> false)).isFalse();
        } finally {
            p.destroyForcibly().waitFor();
        }
    }
}
