package dev.crucible.testhost;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

/** A missing capability fails a run that promises it, and is a skip that says why everywhere else. */
class RequiresTest {
    @Test
    void aPromisedCapabilityThatIsMissingFailsTheTest() {
        assertThatThrownBy(() -> Promises.check(Capability.HAPROXY, "no haproxy", "all"))
                .isInstanceOf(AssertionError.class).hasMessageContaining("promises haproxy").hasMessageContaining("no haproxy");
        assertThatThrownBy(() -> Promises.check(Capability.HAPROXY, "no haproxy", "root, haproxy"))
                .isInstanceOf(AssertionError.class);
    }

    @Test
    void anUnpromisedCapabilityThatIsMissingIsASkipNamingItAndWhy() {
        for (String promise : new String[] {null, "", "root,chromium"}) {
            assertThatThrownBy(() -> Promises.check(Capability.HAPROXY, "no haproxy (apt-get install haproxy)", promise))
                    .isInstanceOf(TestAbortedException.class)
                    .hasMessage("skipped: needs haproxy: no haproxy (apt-get install haproxy)");
        }
    }

    @Test
    void aShapeOfTheHostIsNeverPromisedSoItsAbsenceIsASkip() {
        assertThatThrownBy(() -> Promises.check(Capability.CGROUP_V2, "this host's cgroups are v1", "all"))
                .isInstanceOf(TestAbortedException.class).hasMessageContaining("needs cgroup-v2");
    }

    @Test
    void aPresentCapabilityLetsTheTestRun() {
        assertThatCode(() -> Promises.check(Capability.HAPROXY, null, "all")).doesNotThrowAnyException();
    }
}
