package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * When the host itself runs out of memory, its OOM killer takes a sandbox first: every sandbox, spawned or forked from
 * a zygote, starts with the highest {@code oom_score_adj}. Set by a launcher with {@code CAP_SYS_RESOURCE} (root on a
 * host) that is also the floor: a program cannot lower it to hide behind the server. Where root lacks the capability
 * (some containers, this CI machine), the floor is the default 0: never below the server's.
 */
class OomFirstTest {
    static final String PYTHON = """
            score = open('/proc/self/oom_score_adj').read().strip()
            for value in ('0', '-1'):
                try:
                    with open('/proc/self/oom_score_adj', 'w') as f:
                        f.write(value)
                except OSError:
                    pass
            print(score, open('/proc/self/oom_score_adj').read().strip())
            """;

    @Test
    void everySandboxIsTheHostsFirstVictimAndCannotHideBehindTheServer() throws Exception {
        String floor = canSetTheFloor() ? "1000" : "0";
        if (floor.equals("0")) {
            System.out.println("NOTE OomFirstTest: this process lacks CAP_SYS_RESOURCE, so the score's floor is 0 here");
        }
        ExecuteResult forked = TestHost.crucible().executor().execute(ExecuteRequest.of("python", PYTHON));
        assertThat(forked.stdout()).as(forked.stderr()).isEqualTo("1000 " + floor + "\n");
        ExecuteResult spawned = TestHost.crucible().executor().execute(ExecuteRequest.of("bash",
                "cat /proc/self/oom_score_adj; echo -500 > /proc/self/oom_score_adj 2>/dev/null || echo refused"));
        assertThat(spawned.stdout()).as(spawned.stderr()).isEqualTo("1000\nrefused\n");
    }

    /** Whether this process has CAP_SYS_RESOURCE (bit 24): a root launcher then sets the floor too. */
    static boolean canSetTheFloor() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("CapEff:")) {
                return (Long.parseUnsignedLong(line.substring(7).strip(), 16) & (1L << 24)) != 0;
            }
        }
        return false;
    }
}
