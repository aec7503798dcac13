package dev.crucible.os;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.os.ProcStatus.Standing;
import org.junit.jupiter.api.Test;

/**
 * A signal counts from the moment it is sent: these are the texts the kernel shows for a process that has not yet
 * had the CPU to act on it (a starved agent), next to those of one that has, and of a live process of our own.
 */
class ProcStatusTest {
    private static String status(String state, String sigPnd, String shdPnd) {
        return "Name:\tpython3\nUmask:\t0022\nState:\t" + state + "\nTgid:\t42\nPid:\t42\nNSpid:\t42\t3\nSigQ:\t1/94000\nSigPnd:\t"
                + sigPnd + "\nShdPnd:\t" + shdPnd + "\nSigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\n";
    }

    @Test
    void aSleeperWithNothingPendingRuns() {
        assertThat(ProcStatus.parse(status("S (sleeping)", "0000000000000000", "0000000000000000")).standing())
                .isEqualTo(Standing.RUNS);
    }

    @Test
    void aSleeperWithAKillPendingIsAlreadyEnding() {
        assertThat(ProcStatus.parse(status("S (sleeping)", "0000000000000000", "0000000000000100")).standing())
                .isEqualTo(Standing.ENDING);
        assertThat(ProcStatus.parse(status("R (running)", "0000000000000100", "0000000000000000")).standing())
                .isEqualTo(Standing.ENDING);
    }

    @Test
    void aZombieIsEnding() {
        assertThat(ProcStatus.parse(status("Z (zombie)", "0000000000000000", "0000000000000000")).standing())
                .isEqualTo(Standing.ENDING);
    }

    @Test
    void aSleeperWithAStopPendingIsAlreadyStopped() {
        assertThat(ProcStatus.parse(status("S (sleeping)", "0000000000000000", "0000000000040000")).standing())
                .isEqualTo(Standing.STOPPED);
        assertThat(ProcStatus.parse(status("T (stopped)", "0000000000000000", "0000000000000000")).standing())
                .isEqualTo(Standing.STOPPED);
        assertThat(ProcStatus.parse(status("t (tracing stop)", "0000000000000000", "0000000000000000")).standing())
                .isEqualTo(Standing.STOPPED);
    }

    @Test
    void otherPendingSignalsLeaveItRunning() {
        // SIGCHLD (17) and SIGUSR1 (10) pending: handled or ignored by the process, not ours to judge
        assertThat(ProcStatus.parse(status("S (sleeping)", "0000000000010200", "0000000000000000")).standing())
                .isEqualTo(Standing.RUNS);
    }

    @Test
    void aProgramIsInsideASandboxButBubblewrapsMonitorAndInitAreNot() {
        ProcStatus program = ProcStatus.parse(status("S (sleeping)", "0", "0"));
        assertThat(program.innermostPid()).isEqualTo(3);
        assertThat(program.insideSandbox()).isTrue();
        assertThat(ProcStatus.parse(status("S (sleeping)", "0", "0").replace("NSpid:\t42\t3", "NSpid:\t42"))
                .insideSandbox()).as("the monitor, in our namespace").isFalse();
        assertThat(ProcStatus.parse(status("S (sleeping)", "0", "0").replace("NSpid:\t42\t3", "NSpid:\t42\t1"))
                .insideSandbox()).as("its init").isFalse();
    }

    @Test
    void thisProcessRunsAndAMissingOneHasNoStatus() {
        assertThat(ProcStatus.of(ProcessHandle.current().pid()).orElseThrow().standing()).isEqualTo(Standing.RUNS);
        assertThat(ProcStatus.of(Integer.MAX_VALUE)).isEmpty();
    }
}
