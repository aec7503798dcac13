package dev.crucible.sandbox.uid;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.session.spec.SessionConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Inside one launcher no two kinds of sandbox share a uid, whatever the options (issue 49, item 1). */
class UidLayoutTest {
    /** The largest base whose every uid still has a root block, and the largest base at all. */
    private static final long LAST_ROOTED_BASE = (UidLayout.LARGEST_UID - UidLayout.ROOT_UID_BASE)
            / UidLayout.ROOT_BLOCK - UidLayout.SIZE;
    private static final List<Long> BASES = List.of(1L, 20_000L, 61_000L, LAST_ROOTED_BASE, LAST_ROOTED_BASE + 1,
            (long) Integer.MAX_VALUE, UidLayout.LARGEST_UID - UidLayout.SIZE + 1);
    private static final List<Integer> SLOTS = List.of(1, 2, UidLayout.MAX_SLOTS);

    /** Every range of a layout, named. */
    private static List<UidLayout.Range> ranges(UidLayout layout) {
        List<UidLayout.Range> all = new ArrayList<>(List.of(layout.slotUids(), layout.sessionUids(),
                layout.zygoteUids()));
        if (layout.rootBlocks() != null) {
            all.add(layout.rootBlocks());
        }
        return all;
    }

    @Test
    void slotsSessionsZygotesAndRootBlocksAreDisjointAtEveryExtreme() {
        for (long base : BASES) {
            for (int slots : SLOTS) {
                UidLayout layout = new UidLayout(base, slots);
                List<UidLayout.Range> all = ranges(layout);
                for (int i = 0; i < all.size(); i++) {
                    for (int j = i + 1; j < all.size(); j++) {
                        assertThat(all.get(i).overlaps(all.get(j))).as("%s and %s of %s", all.get(i), all.get(j),
                                layout).isFalse();
                    }
                }
                for (UidLayout.Range r : all.subList(0, 3)) {
                    assertThat(r.first()).isGreaterThanOrEqualTo(layout.block().first());
                    assertThat(r.last()).isLessThanOrEqualTo(layout.block().last());
                }
            }
        }
    }

    /** With --max-sessions at its largest, the last session's uid is still below the last zygote's. */
    @Test
    void theHighestSessionNeverReachesAZygote() {
        for (long base : BASES) {
            UidLayout layout = new UidLayout(base, UidLayout.MAX_SLOTS);
            long lastSession = layout.sessionUid(UidLayout.MAX_SESSIONS - 1);
            long lowestZygote = layout.zygoteUid(UidLayout.MAX_ZYGOTES - 1);
            assertThat(lastSession).isLessThan(lowestZygote);
            assertThat(layout.slotUid(UidLayout.MAX_SLOTS - 1)).isLessThan(layout.sessionUid(0));
            assertThat(layout.zygoteUid(0)).isEqualTo(layout.block().last());
        }
        SessionConfig sessions = SessionConfig.defaults(Path.of("/nonexistent"));
        assertThat(sessions.withMaxSessions(UidLayout.MAX_SESSIONS, 1).maxSessions()).isEqualTo(UidLayout.MAX_SESSIONS);
        assertThatThrownBy(() -> sessions.withMaxSessions(UidLayout.MAX_SESSIONS + 1, 1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void sessionsPastTheCapAndZygotesPastTheirsHaveNoUid() {
        UidLayout layout = new UidLayout(61_000, 4);
        assertThatThrownBy(() -> layout.sessionUid(UidLayout.MAX_SESSIONS)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> layout.zygoteUid(UidLayout.MAX_ZYGOTES)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> layout.slotUid(4)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** Every uid's root block is in the claimed root range, or the uid has none. */
    @Test
    void everyRootBlockOfTheBlockIsClaimed() {
        for (long base : BASES) {
            UidLayout layout = new UidLayout(base, 1);
            for (long uid : List.of(layout.block().first(), layout.sessionUid(0),
                    layout.sessionUid(UidLayout.MAX_SESSIONS - 1), layout.block().last())) {
                long root = UidLayout.rootUid(uid);
                if (root < 0) {
                    continue;
                }
                assertThat(layout.rootBlocks()).as("root blocks of %s", layout).isNotNull();
                assertThat(root).isBetween(layout.rootBlocks().first(), layout.rootBlocks().last());
                assertThat(root + UidLayout.ROOT_BLOCK - 1).isLessThanOrEqualTo(layout.rootBlocks().last());
            }
        }
        assertThat(new UidLayout(LAST_ROOTED_BASE, 1).rootBlocks().last()).isLessThanOrEqualTo(UidLayout.LARGEST_UID);
        assertThat(new UidLayout(UidLayout.LARGEST_UID - UidLayout.SIZE + 1, 1).rootBlocks()).isNull();
    }

    @Test
    void aBaseOrSlotCountOutOfRangeIsRefused() {
        assertThatThrownBy(() -> new UidLayout(0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new UidLayout(UidLayout.LARGEST_UID - UidLayout.SIZE + 2, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new UidLayout(61_000, UidLayout.MAX_SLOTS + 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new UidLayout(61_000, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
