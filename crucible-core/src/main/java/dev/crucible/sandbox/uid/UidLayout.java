package dev.crucible.sandbox.uid;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Every host uid one launcher will ever use, derived here and nowhere else from its first uid {@code base} and its
 * slot count. Inside the block of {@link #SIZE} uids from the base: slot N is base + N, session N is base +
 * {@link #SESSION_OFFSET} + N (N below {@link #MAX_SESSIONS}, the cap of {@code --max-sessions}), zygote K is the
 * block's last uid − K (K below {@link #MAX_ZYGOTES}). Outside it: uid U's root block, the {@link #ROOT_BLOCK} uids from
 * {@link #ROOT_UID_BASE} + U × {@link #ROOT_BLOCK} that a session with a root of its own maps (and where a gVisor
 * Sentry runs), for every U of the block whose root block lies below the largest uid. {@link #claimed()} is what a
 * launcher leases host-wide: two layouts whose claims do not overlap share no uid, root blocks included. Uids are longs
 * (root blocks pass 2^31). Immutable.
 *
 * @param base the first uid of the block: at least 1, and the block ends at or below {@link #LARGEST_UID}
 * @param slots how many run slots: 1 to {@link #MAX_SLOTS}
 */
public record UidLayout(long base, int slots) {
    /** At most this many slots: session uids follow. */
    public static final int MAX_SLOTS = 1000;
    /** Session uids start this far above the base. */
    public static final int SESSION_OFFSET = MAX_SLOTS;
    /** Session numbers are below this: the largest {@code --max-sessions}. */
    public static final int MAX_SESSIONS = 3000;
    /** Kinds of zygote a launcher starts at most, each with a uid of its own at the block's end. */
    public static final int MAX_ZYGOTES = 96;
    /** Uids per block: slots, then sessions, then zygotes, none shared. */
    public static final int SIZE = SESSION_OFFSET + MAX_SESSIONS + MAX_ZYGOTES;
    /** How many host uids one uid's root block holds (a session's root maps 0-999 and 1001-4094 to its block). */
    public static final int ROOT_BLOCK = 4096;
    /** Uid U's root block starts at {@code ROOT_UID_BASE + U * ROOT_BLOCK}. */
    public static final long ROOT_UID_BASE = 1L << 31;
    /** The largest uid a block may reach ({@code (uid_t) -1} is no uid). */
    public static final long LARGEST_UID = 0xFFFF_FFFEL;

    /** The uids {@code first} to {@code last}, both included. */
    public record Range(long first, long last) {
        public Range {
            if (first > last) {
                throw new IllegalArgumentException("empty uid range " + first + ".." + last);
            }
        }

        /** Whether some uid is in both. */
        public boolean overlaps(Range other) {
            return first <= other.last && other.first <= last;
        }

        @Override
        public String toString() {
            return first + ".." + last;
        }
    }

    public UidLayout {
        if (slots < 1 || slots > MAX_SLOTS) {
            throw new IllegalArgumentException("between 1 and " + MAX_SLOTS + " slots (session uids follow); got "
                    + slots);
        }
        if (base < 1 || base + SIZE - 1 > LARGEST_UID) {
            throw new IllegalArgumentException("a uid base from 1 to " + (LARGEST_UID - SIZE + 1) + "; got " + base);
        }
    }

    /** The slots' uids. */
    public Range slotUids() {
        return new Range(base, base + slots - 1);
    }

    /** The uids of every session number. */
    public Range sessionUids() {
        return new Range(base + SESSION_OFFSET, base + SESSION_OFFSET + MAX_SESSIONS - 1);
    }

    /** The uids of every zygote. */
    public Range zygoteUids() {
        return new Range(base + SIZE - MAX_ZYGOTES, base + SIZE - 1);
    }

    /** The whole block: every uid a sandbox of this launcher runs as. */
    public Range block() {
        return new Range(base, base + SIZE - 1);
    }

    /** The root blocks of the block's uids that lie below the largest uid; null when none does. */
    public Range rootBlocks() {
        long last = Math.min(base + SIZE - 1, (LARGEST_UID - ROOT_UID_BASE) / ROOT_BLOCK - 1);
        return last < base ? null : new Range(ROOT_UID_BASE + base * ROOT_BLOCK, rootUid(last) + ROOT_BLOCK - 1);
    }

    /** What this launcher leases host-wide: its block, and its root blocks when it has any. */
    public List<Range> claimed() {
        List<Range> ranges = new ArrayList<>(List.of(block()));
        Range roots = rootBlocks();
        if (roots != null) {
            ranges.add(roots);
        }
        return List.copyOf(ranges);
    }

    /** Slot {@code slot}'s uid. */
    public long slotUid(int slot) {
        return base + Objects.checkIndex(slot, slots);
    }

    /** Session {@code number}'s uid. */
    public long sessionUid(int number) {
        return base + SESSION_OFFSET + Objects.checkIndex(number, MAX_SESSIONS);
    }

    /** The uid of the launcher's {@code index}th kind of zygote (from 0). */
    public long zygoteUid(int index) {
        return base + SIZE - 1 - Objects.checkIndex(index, MAX_ZYGOTES);
    }

    /** The first uid of {@code uid}'s root block, or -1 when the block would pass the largest uid (or uid is -1). */
    public static long rootUid(long uid) {
        long first = ROOT_UID_BASE + uid * ROOT_BLOCK;
        return uid < 0 || first + ROOT_BLOCK > LARGEST_UID ? -1 : first;
    }
}
