package dev.crucible.session.budget;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Each owner's share of the disk's room for workspaces that grow (issue 50). The {@code budget} is what all the
 * workspaces' images may hold: the data directory's free room above the headroom and beside what is promised, plus
 * what they hold already. Every owner keeps what its workspaces held when made (its <em>floors</em>); the rest of the
 * budget is shared out by water-filling: an owner wanting less than an equal part (its workspaces' quotas less its
 * floors) gets all it wants, and what it leaves is split equally among the others. So an owner's <em>cap</em> is its
 * floors plus {@code min(its want, level)}, and the caps add up to at most the budget.
 *
 * <p>The property kept: a grow is admitted only within its owner's cap, and a new session (or snapshot) only while
 * every owner still holds no more than its cap once it is counted. Then the owners' holdings can each reach their cap
 * together: whatever one tenant writes, the others' workspaces can grow to their share; a grow that does not fit is
 * {@code ENOSPC} inside the grower's own workspace. A single owner's cap is the whole budget. When the quotas fit the
 * budget whole, every cap is the owner's quotas: no worse than allocating every workspace whole. Not thread-safe:
 * made and read under {@link SessionNumbers}' lock.
 *
 * @param owners by owner: floors, held (allocated now and grows under way), demand (the most it could hold)
 * @param budget the bytes all the workspaces' images may hold; -1: unknown (nothing refused)
 */
record Shares(Map<String, long[]> owners, long budget) {
    static final int FLOORS = 0;
    static final int HELD = 1;
    static final int DEMAND = 2;

    /** The most each owner not held to its whole want may hold beyond its floors (water-filling). */
    long level() {
        List<Long> wants = new ArrayList<>();
        long floors = 0;
        for (long[] o : owners.values()) {
            floors += o[FLOORS];
            wants.add(Math.max(0, o[DEMAND] - o[FLOORS]));
        }
        wants.sort(null);
        long left = Math.max(0, budget - floors);
        int rest = wants.size();
        for (long want : wants) {
            long even = left / rest;
            if (want > even) {
                return even;
            }
            left -= want;
            rest--;
        }
        return Long.MAX_VALUE; // every want fits
    }

    /** The most {@code owner} may hold. */
    long cap(String owner) {
        long[] o = owners.get(owner);
        if (o == null) {
            return 0;
        }
        return o[FLOORS] + Math.min(Math.max(0, o[DEMAND] - o[FLOORS]), level());
    }

    /** Whether {@code owner} may hold {@code bytes} more. */
    boolean admits(String owner, long bytes) {
        if (budget < 0) {
            return true;
        }
        long[] o = owners.get(owner);
        return o != null && o[HELD] + bytes <= cap(owner);
    }

    /** Why {@code what} cannot be admitted (an owner would hold more than its cap); null if it can. */
    RequestException refusal(String what) {
        if (budget < 0) {
            return null;
        }
        long level = level();
        for (long[] o : owners.values()) {
            if (o[HELD] > o[FLOORS] + Math.min(Math.max(0, o[DEMAND] - o[FLOORS]), level)) {
                return new RequestException(ErrorCode.DATA_DIR_FULL, "the data directory's file system has no room"
                        + " for " + what + ": the workspaces there hold " + (held() >> 20) + " MiB of the "
                        + (Math.max(0, budget) >> 20) + " MiB they may, and each token's workspaces are kept room to"
                        + " grow to their share of it: delete a session or a snapshot, wait for idle sessions to"
                        + " expire, or free space there");
            }
        }
        return null;
    }

    private long held() {
        long sum = 0;
        for (long[] o : owners.values()) {
            sum += o[HELD];
        }
        return sum;
    }
}
