package dev.crucible.session.budget;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.error.ErrorCode;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The owners' shares of the disk's room (issue 50): water-filling over what each holds beyond its floors. */
class SharesTest {
    static final long MIB = 1 << 20;

    /** An owner with {@code n} workspaces of 1,024 MiB, each made holding 30 MiB, holding {@code held} MiB in all. */
    static long[] owner(int n, long held) {
        return new long[] {n * 30 * MIB, held * MIB, n * 1024 * MIB};
    }

    static Shares shares(long budgetMib, Object... owners) {
        Map<String, long[]> by = new HashMap<>();
        for (int i = 0; i < owners.length; i += 2) {
            by.put((String) owners[i], (long[]) owners[i + 1]);
        }
        return new Shares(by, budgetMib * MIB);
    }

    @Test
    void aSingleOwnerMayTakeAllTheRoom() {
        Shares s = shares(10_000, "a", owner(100, 3_000));
        assertThat(s.cap("a")).isEqualTo(10_000 * MIB);
        assertThat(s.admits("a", 7_000 * MIB)).isTrue();
        assertThat(s.admits("a", 7_001 * MIB)).isFalse();
        assertThat(s.refusal("a new session")).isNull();
    }

    @Test
    void twoOwnersWantingMoreThanThereIsEachHaveHalfBeyondTheirFloors() {
        Shares s = shares(10_000, "a", owner(100, 3_000), "b", owner(10, 300));
        long extra = (10_000 - 3_000 - 300) * MIB;
        assertThat(s.cap("a")).isEqualTo(3_000 * MIB + extra / 2);
        assertThat(s.cap("b")).isEqualTo(300 * MIB + extra / 2);
        assertThat(s.admits("a", s.cap("a") - 3_000 * MIB)).isTrue();
        assertThat(s.admits("a", s.cap("a") - 3_000 * MIB + 1)).as("a at its share").isFalse();
        assertThat(s.cap("a") + s.cap("b")).isLessThanOrEqualTo(10_000 * MIB);
    }

    @Test
    void anOwnerWantingLessThanItsPartLeavesTheRestToTheOthers() {
        Shares s = shares(10_000, "a", owner(100, 3_000), "b", owner(1, 30));
        assertThat(s.cap("b")).as("all its quota").isEqualTo(1024 * MIB);
        assertThat(s.cap("a")).isEqualTo((10_000 - 1024) * MIB);
    }

    @Test
    void quotasThatFitTheBudgetWholeAreEachOwnersCapAsWithWholeAllocation() {
        Shares s = shares(10_000, "a", owner(4, 120), "b", owner(4, 120));
        assertThat(s.cap("a")).isEqualTo(4 * 1024 * MIB);
        assertThat(s.cap("b")).isEqualTo(4 * 1024 * MIB);
    }

    @Test
    void anAdmissionThatWouldLeaveAnOwnerPastItsShareIsRefused() {
        // a alone grew to 8,000 MiB; with b's first session a's share would be about half the room
        Shares s = shares(10_000, "a", owner(100, 8_000), "b", owner(1, 30));
        assertThat(s.refusal("a new session")).as("b wants little: its quota fits beside a").isNull();
        Shares more = shares(10_000, "a", owner(100, 8_000), "b", owner(5, 150));
        assertThat(more.refusal("a new session")).isNotNull().satisfies(e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.DATA_DIR_FULL);
            assertThat(e.getMessage()).contains("share");
        });
    }

    @Test
    void anUnknownRoomRefusesNothing() {
        Shares s = new Shares(Map.of("a", owner(1, 30)), -1);
        assertThat(s.admits("a", 1L << 40)).isTrue();
        assertThat(s.refusal("a new session")).isNull();
    }
}
