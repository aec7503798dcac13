package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** The filter itself: every denied name is known or knowingly absent, and nothing above the table gets through. */
class SeccompProgramTest {
    @Test
    void theProgramStartsWithTheRuleAboveTheHighestKnownNumber() {
        byte[] program = SeccompProgram.build();
        ByteBuffer b = ByteBuffer.wrap(program).order(ByteOrder.nativeOrder());
        assertThat(b.getShort(0)).as("load the architecture").isEqualTo((short) 0x20);
        assertThat(b.getShort(4 * 8)).as("jump if above the table").isEqualTo((short) 0x25);
        int highest = b.getInt(4 * 8 + 4);
        assertThat(highest).as("libseccomp's newest call here").isBetween(400, 1023);
        assertThat(b.getInt(9 * 8 + 4)).as("EPERM").isEqualTo(0x00050000 | 1);
        assertThat(b.getInt(10 * 8 + 4)).as("ENOSYS").isEqualTo(0x00050000 | 38);
    }

    @Test
    void aDeniedNameMayBeUnknownOnlyWhenItIsKnowinglySo() {
        // the build itself throws for any other unknown name; here: the list of exceptions stays small and named
        assertThat(SeccompProgram.DENIED).containsAll(java.util.List.of("modify_ldt", "uselib", "open_tree",
                "open_tree_attr", "move_mount", "fsopen"));
        assertThat(SeccompProgram.MAY_BE_UNKNOWN).allMatch(SeccompProgram.DENIED::contains);
    }
}
