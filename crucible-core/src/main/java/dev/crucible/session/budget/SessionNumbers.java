package dev.crucible.session.budget;

import com.sun.management.OperatingSystemMXBean;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.health.PartStatus;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.WorkspaceDisk;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Session numbers (each picks a session's uid, see {@code Sandbox.sessionUid}) and what each number reserves: the
 * session's memory request (what it is expected to use; its limit when that is smaller, or when requests are off) and
 * one workspace quota. A number is taken only within the caps: sessions in all, per owner, the memory budget (the sum
 * of the requests, while the sessions' group, held to the budget by the kernel, is not nearly full), the operator's
 * disk budget if set (the sum of the workspace quotas), and the disk itself: the data directory's file system must
 * have room, free now, for this workspace and for every workspace admitted but not yet made, above a headroom kept
 * for records and logs. That is decided under the lock that takes the number, so concurrent creates cannot all count
 * the same free space; a workspace made ({@link #made}) is then in the file system's own figure. Thread-safe.
 */
public final class SessionNumbers {
    private record Reservation(String owner, int memoryMb) {}

    /** New sessions are refused while the sessions' group is charged this share of the budget or more. */
    static final double PRESSURE = 0.9;

    private final int maxSessions;
    private final int maxPerOwner;
    private final long memoryBudgetMb;
    private final long diskBudgetBytes;
    private final long quotaBytes;
    private final DiskRoom room;
    private final BitSet taken = new BitSet();
    /** Numbers admitted whose workspace is not made yet: their room is not in the file system's free space yet. */
    private final BitSet unmade = new BitSet();
    /** The bytes of workspace grows admitted and not done yet: not in the file system's free space yet either. */
    private long growing;
    /** The same, by session number: its owner's already. */
    private final Map<Integer, Long> growingBy = new HashMap<>();
    /** What each session's workspace holds on the host, by number (null: its quota whole). */
    private Supplier<Map<Integer, WorkspaceDisk.Allocation>> allocations = Map::of;
    /**
     * The least a growing workspace held when mounted: what a new one takes at first (one mounted again after a restart
     * holds what it grew to); its quota until one is seen.
     */
    private long floorSeen;
    private final Map<Integer, Reservation> reservations = new HashMap<>();
    /** The sum of the reservations' memory, kept as they come and go (read by every /healthz and /readyz). */
    private long reservedMb;
    private final long requestMb;
    private LongSupplier snapshotBytes = () -> 0;
    /** What the sessions' group is charged now, in bytes (-1: unknown). */
    private LongSupplier usedBytes = () -> -1;

    /**
     * @param diskBudgetBytes the operator's cap on the sum of the workspace quotas; 0: none but the disk's room
     * @param requestMb what each session reserves of the memory budget at most; 0: its whole limit
     */
    public SessionNumbers(int maxSessions, int maxPerOwner, long memoryBudgetMb, long diskBudgetBytes, long quotaBytes,
            long requestMb, DiskRoom room) {
        this.maxSessions = maxSessions;
        this.maxPerOwner = maxPerOwner;
        this.memoryBudgetMb = memoryBudgetMb;
        this.diskBudgetBytes = diskBudgetBytes;
        this.quotaBytes = Math.max(WorkspaceDisk.MIN_BYTES, quotaBytes);
        this.requestMb = requestMb;
        this.room = room;
    }

    /**
     * The numbers {@code config}'s caps allow, over its budgets or (0) the automatic ones: the host's memory less 1 GiB
     * (at least 1 GiB), and no disk budget but the room {@code store}'s file system has ({@link DiskRoom}); {@code
     * store} tells the numbers when a workspace is made. The sessions of {@code sandbox}
     * are held to the memory budget together, in one group; where that group cannot be made, a warning says so and
     * each session is admitted for its whole limit (requests need the group: without it nothing may overcommit).
     */
    public static SessionNumbers of(SessionConfig config, SessionStore store, Sandbox sandbox) throws IOException {
        long memory = config.memoryBudgetMb() > 0 ? config.memoryBudgetMb() : Math.max(1024,
                ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                        .getTotalMemorySize() / (1024 * 1024) - 1024);
        long disk = Math.max(0, config.diskBudgetBytes());
        String why;
        try {
            sandbox.limitSessions(memory * 1024 * 1024);
            why = sandbox.sessionsMemoryBytes() < 0 ? "this host gives sandboxes no cgroups" : null;
        } catch (IOException e) {
            why = e.getMessage();
        }
        if (why != null && config.memoryRequestMb() > 0) {
            System.getLogger("crucible.sessions").log(System.Logger.Level.WARNING, "cannot hold the sessions to their"
                    + " memory budget together (" + why + "): each is admitted for its whole limit, none overcommitted");
        }
        SessionNumbers numbers = new SessionNumbers(config.maxSessions(), config.maxPerOwner(), memory, disk,
                config.workspaceQuota(), why == null ? config.memoryRequestMb() : 0, DiskRoom.of(store));
        store.onWorkspaceMade(numbers::made, new SessionStore.Grows() {
            @Override
            public boolean take(int number, long bytes) {
                return numbers.growing(number, bytes);
            }

            @Override
            public void done(int number, long bytes) {
                numbers.grown(number, bytes);
            }
        });
        numbers.allocations = store::allocations;
        if (why == null) {
            numbers.usedBytes = sandbox::sessionsMemoryBytes;
        }
        return numbers;
    }

    /** The memory budget, in MiB. */
    public long memoryBudgetMb() {
        return memoryBudgetMb;
    }

    /** The memory the sessions reserve now (the sum of their requests), in MiB. */
    public synchronized long memoryReservedMb() {
        return reservedMb;
    }

    /** The memory the sessions use now (their group's charge), in bytes; -1 when unknown. */
    public long memoryUsedBytes() {
        return usedBytes.getAsLong();
    }

    /**
     * The sessions' memory as {@code /readyz} shows it: degraded (new sessions refused, those there served) while
     * their group is charged {@value #PRESSURE} of the budget or more, or while their requests fill it.
     */
    public PartStatus memoryPart() {
        long reserved = memoryReservedMb();
        long used = memoryUsedBytes();
        String detail = "sessions reserve " + reserved + " of " + memoryBudgetMb + " MiB" + (used < 0 ? ""
                : ", use " + (used >> 20) + " MiB");
        boolean full = reserved >= memoryBudgetMb || used >= PRESSURE * memoryBudgetMb * 1024 * 1024;
        return full ? PartStatus.degraded("session_memory", detail + ": new sessions are refused")
                : PartStatus.ok("session_memory", detail);
    }

    /** What a session with a limit of {@code limitMb} reserves. */
    int request(int limitMb) {
        return requestMb <= 0 ? limitMb : (int) Math.min(limitMb, requestMb);
    }

    /**
     * Takes the lowest free number for a new session of {@code owner} with {@code memoryMb} of memory.
     *
     * @throws RequestException {@code too_many_sessions}, {@code memory_budget_exhausted}, {@code
     *     disk_budget_exhausted} (the operator's budget) or {@code data_dir_full} (no room on the disk now), saying
     *     what to do
     */
    public synchronized int take(String owner, int memoryMb) {
        int request = request(memoryMb);
        RequestException refused = refusal(owner, request, 0);
        if (refused != null) {
            throw refused;
        }
        int number = taken.nextClearBit(0);
        reserve(number, owner, request);
        unmade.set(number);
        return number;
    }

    /**
     * As {@link #take}, for a session made ahead of being asked for: only while the caps leave room for another of
     * the same size besides it; -1 otherwise.
     */
    public synchronized int takeAhead(String owner, int memoryMb) {
        int request = request(memoryMb);
        if (refusal(owner, request, 1) != null) {
            return -1;
        }
        int number = taken.nextClearBit(0);
        reserve(number, owner, request);
        unmade.set(number);
        return number;
    }

    /**
     * Gives {@code number} (a session made ahead) to {@code owner}, for a session of {@code memoryMb}.
     *
     * @throws RequestException {@code too_many_sessions} when {@code owner} holds its maximum
     */
    public synchronized void adopt(int number, String owner, int memoryMb) {
        if (!ownerHasRoom(owner)) {
            throw ownerFull();
        }
        reserve(number, owner, request(memoryMb));
    }

    /** Whether {@code owner} holds fewer sessions than its cap. */
    public synchronized boolean ownerHasRoom(String owner) {
        return reservations.values().stream().filter(r -> r.owner().equals(owner)).count() < maxPerOwner;
    }

    private RequestException ownerFull() {
        return new RequestException(ErrorCode.TOO_MANY_SESSIONS, "this token holds its maximum of " + maxPerOwner
                + " sessions; delete one first");
    }

    /** Why a session reserving {@code request} MiB cannot be had now with room for {@code besides} more; null if it can. */
    private RequestException refusal(String owner, int request, int besides) {
        if (reservations.size() + besides >= maxSessions) {
            return new RequestException(ErrorCode.TOO_MANY_SESSIONS, "the server holds its maximum of " + maxSessions
                    + " sessions; delete one or wait for idle ones to expire");
        }
        if (!ownerHasRoom(owner)) {
            return ownerFull();
        }
        long memory = reservedMb;
        if (memory + (long) request * (1 + besides) > memoryBudgetMb) {
            return new RequestException(ErrorCode.MEMORY_BUDGET_EXHAUSTED, "sessions already reserve " + memory
                    + " of the " + memoryBudgetMb + " MiB of memory the server gives them; this one needs " + request
                    + ": delete a session, ask for a smaller memory_mb, or wait for idle ones to expire");
        }
        long used = usedBytes.getAsLong();
        if (used >= PRESSURE * memoryBudgetMb * 1024 * 1024) {
            return new RequestException(ErrorCode.MEMORY_BUDGET_EXHAUSTED, "sessions use " + (used >> 20) + " of the "
                    + memoryBudgetMb + " MiB of memory the server gives them now: delete a session, or wait for"
                    + " idle ones to expire");
        }
        long disk = (long) reservations.size() * quotaBytes + snapshotBytes.getAsLong();
        if (diskBudgetBytes > 0 && disk + quotaBytes * (1 + besides) > diskBudgetBytes) {
            return new RequestException(ErrorCode.DISK_BUDGET_EXHAUSTED, "sessions and snapshots already reserve "
                    + disk / (1 << 20) + " of the " + diskBudgetBytes / (1 << 20) + " MiB of disk the server gives them"
                    + " and each workspace takes " + quotaBytes / (1 << 20) + " MiB: delete a session or a snapshot,"
                    + " or wait for idle sessions to expire");
        }
        RequestException full = room.refusal(promised(), quotaBytes * (1 + besides),
                "each new workspace takes " + quotaBytes / (1 << 20) + " MiB: delete a session or a snapshot, wait for"
                        + " idle sessions to expire, or free space there");
        return full != null ? full : shares(owner, 1 + besides, 0).refusal("a new session");
    }

    /**
     * Takes {@code wanted} for a session kept from an earlier run (no caps: it exists already), or the lowest free
     * number when {@code wanted} is taken or beyond the cap on sessions.
     *
     * @return the number the session now has
     */
    public synchronized int retake(int wanted, String owner, int memoryMb) {
        int number = wanted >= maxSessions || taken.get(wanted) ? taken.nextClearBit(0) : wanted;
        reserve(number, owner, request(memoryMb));
        return number;
    }

    private void reserve(int number, String owner, int memoryMb) {
        taken.set(number);
        Reservation earlier = reservations.put(number, new Reservation(owner, memoryMb));
        reservedMb += memoryMb - (earlier == null ? 0 : earlier.memoryMb());
    }

    /** Counts what {@code bytes} says the snapshots hold against the disk budget from now on. */
    public synchronized void countSnapshots(LongSupplier bytes) {
        snapshotBytes = bytes;
    }

    /**
     * Checks that a new snapshot of {@code bytes} fits the disk budget beside the sessions and the snapshots there are.
     *
     * @throws RequestException {@code disk_budget_exhausted} (the operator's budget) or {@code data_dir_full} (no room
     *     on the disk), saying what to do
     */
    public synchronized void admitSnapshot(long bytes) {
        long disk = (long) reservations.size() * quotaBytes + snapshotBytes.getAsLong();
        if (diskBudgetBytes > 0 && disk + bytes > diskBudgetBytes) {
            throw new RequestException(ErrorCode.DISK_BUDGET_EXHAUSTED, "sessions and snapshots already reserve "
                    + disk / (1 << 20) + " of the " + diskBudgetBytes / (1 << 20) + " MiB of disk the server gives"
                    + " them and this snapshot holds " + Math.max(1, bytes >> 20) + " MiB: delete a snapshot or a"
                    + " session first");
        }
        RequestException full = room.refusal(promised(), bytes,
                "this snapshot holds " + Math.max(1, bytes >> 20) + " MiB: delete a snapshot or a session first");
        if (full == null) {
            full = shares(null, 0, bytes).refusal("a snapshot of " + Math.max(1, bytes >> 20) + " MiB");
        }
        if (full != null) {
            throw full;
        }
    }

    /** What is promised and not yet in the file system's free space: workspaces being made, grows under way. */
    private long promised() {
        return (long) unmade.cardinality() * quotaBytes + growing;
    }

    /**
     * Admits a grow of {@code bytes} of session {@code number}'s workspace: against the disk's room beside what is
     * promised and above the headroom, as a new workspace is, and within its owner's share ({@link Shares}); false
     * (not grown: its writes get {@code ENOSPC} at its size, asked again later) otherwise.
     */
    public synchronized boolean growing(int number, long bytes) {
        Reservation r = reservations.get(number);
        if (r == null || room.refusal(promised(), bytes, "") != null) {
            return false;
        }
        Shares shares = shares(null, 0, 0);
        if (!shares.admits(r.owner(), bytes)) {
            return false;
        }
        growing += bytes;
        growingBy.merge(number, bytes, Long::sum);
        return true;
    }

    /** Says that a grow admitted by {@link #growing} is done (or failed): its bytes are in the file system's figure. */
    public synchronized void grown(int number, long bytes) {
        growing -= bytes;
        growingBy.computeIfPresent(number, (n, b) -> b - bytes == 0 ? null : b - bytes);
    }

    /**
     * Every owner's share of the disk's room as it is now, with {@code more} new sessions of {@code owner} (if not
     * null) and {@code outside} bytes more taken outside the workspaces (a snapshot).
     */
    private Shares shares(String owner, int more, long outside) {
        Map<String, long[]> by = new HashMap<>();
        long held = 0;
        for (Map.Entry<Integer, WorkspaceDisk.Allocation> e : allocations.get().entrySet()) {
            Reservation r = reservations.get(e.getKey());
            if (r == null) {
                continue;
            }
            WorkspaceDisk.Allocation a = e.getValue();
            long inflight = growingBy.getOrDefault(e.getKey(), 0L);
            long[] o = by.computeIfAbsent(r.owner(), k -> new long[3]);
            long now = (a == null ? quotaBytes : a.allocated()) + inflight;
            o[Shares.FLOORS] += a == null ? quotaBytes : a.floor();
            o[Shares.HELD] += now;
            o[Shares.DEMAND] += a == null ? quotaBytes : Math.max(a.most(), now);
            held += now - inflight; // what the file system's free figure already leaves out
            if (a != null) {
                floorSeen = floorSeen == 0 ? a.floor() : Math.min(floorSeen, a.floor());
            }
        }
        if (owner != null && more > 0) {
            long floor = floorSeen > 0 ? floorSeen : quotaBytes;
            long[] o = by.computeIfAbsent(owner, k -> new long[3]);
            o[Shares.FLOORS] += floor * more;
            o[Shares.HELD] += floor * more;
            o[Shares.DEMAND] += quotaBytes * more;
            held += floor * more; // not in the free figure yet, so counted out of it as well: the room is unchanged
            outside += floor * more;
        }
        long free = room.usable().getAsLong();
        long budget = free < 0 ? -1 : free - room.headroom() - promised() - outside + held;
        return new Shares(by, budget);
    }

    /** Says that session {@code number}'s workspace is made: its room is now in the file system's own figure. */
    public synchronized void made(int number) {
        unmade.clear(number);
    }

    /** Frees {@code number} and what it reserved. */
    public synchronized void release(int number) {
        taken.clear(number);
        unmade.clear(number);
        Reservation gone = reservations.remove(number);
        reservedMb -= gone == null ? 0 : gone.memoryMb();
    }
}
