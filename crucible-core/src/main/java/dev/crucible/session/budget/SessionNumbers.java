package dev.crucible.session.budget;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.WorkspaceDisk;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;

/**
 * Session numbers (each picks a session's uid, see {@code Sandbox.sessionUid}) and what each number reserves: the
 * session's memory limit and one workspace quota. A number is taken only within the caps: sessions in all, per owner,
 * the memory budget (the sum of the sessions' memory limits, each enforced by its own cgroup) and the disk budget
 * (the sum of the workspace quotas). Thread-safe.
 */
public final class SessionNumbers {
    private record Reservation(String owner, int memoryMb) {}

    private final int maxSessions;
    private final int maxPerOwner;
    private final long memoryBudgetMb;
    private final long diskBudgetBytes;
    private final long quotaBytes;
    private final BitSet taken = new BitSet();
    private final Map<Integer, Reservation> reservations = new HashMap<>();
    private java.util.function.LongSupplier snapshotBytes = () -> 0;

    public SessionNumbers(int maxSessions, int maxPerOwner, long memoryBudgetMb, long diskBudgetBytes, long quotaBytes) {
        this.maxSessions = maxSessions;
        this.maxPerOwner = maxPerOwner;
        this.memoryBudgetMb = memoryBudgetMb;
        this.diskBudgetBytes = diskBudgetBytes;
        this.quotaBytes = Math.max(WorkspaceDisk.MIN_BYTES, quotaBytes);
    }

    /**
     * The numbers these caps allow, over these budgets or (0) the automatic ones: the host's memory less 1 GiB (at
     * least 1 GiB), and 90% of the file system {@code store} keeps sessions on.
     */
    public static SessionNumbers of(int maxSessions, int maxPerOwner, long memoryBudgetMb, long diskBudgetBytes,
            long quotaBytes, SessionStore store) throws IOException {
        long memory = memoryBudgetMb > 0 ? memoryBudgetMb : Math.max(1024,
                ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                        .getTotalMemorySize() / (1024 * 1024) - 1024);
        long disk = diskBudgetBytes > 0 ? diskBudgetBytes : store.defaultDiskBudget();
        return new SessionNumbers(maxSessions, maxPerOwner, memory, disk, quotaBytes);
    }

    /**
     * Takes the lowest free number for a new session of {@code owner} with {@code memoryMb} of memory.
     *
     * @throws RequestException {@code too_many_sessions}, {@code memory_budget_exhausted} or
     *     {@code disk_budget_exhausted}, saying what to do
     */
    public synchronized int take(String owner, int memoryMb) {
        if (reservations.size() >= maxSessions) {
            throw new RequestException(ErrorCode.TOO_MANY_SESSIONS, "the server holds its maximum of " + maxSessions
                    + " sessions; delete one or wait for idle ones to expire");
        }
        long mine = reservations.values().stream().filter(r -> r.owner().equals(owner)).count();
        if (mine >= maxPerOwner) {
            throw new RequestException(ErrorCode.TOO_MANY_SESSIONS, "this token holds its maximum of " + maxPerOwner
                    + " sessions; delete one first");
        }
        long memory = reservations.values().stream().mapToLong(Reservation::memoryMb).sum();
        if (memory + memoryMb > memoryBudgetMb) {
            throw new RequestException(ErrorCode.MEMORY_BUDGET_EXHAUSTED, "sessions already reserve " + memory
                    + " of the " + memoryBudgetMb + " MiB of memory the server gives them; this one needs " + memoryMb
                    + ": delete a session, ask for a smaller memory_mb, or wait for idle ones to expire");
        }
        long disk = (long) reservations.size() * quotaBytes + snapshotBytes.getAsLong();
        if (disk + quotaBytes > diskBudgetBytes) {
            throw new RequestException(ErrorCode.DISK_BUDGET_EXHAUSTED, "sessions and snapshots already reserve "
                    + disk / (1 << 20) + " of the " + diskBudgetBytes / (1 << 20) + " MiB of disk the server gives them"
                    + " and each workspace takes " + quotaBytes / (1 << 20) + " MiB: delete a session or a snapshot,"
                    + " or wait for idle sessions to expire");
        }
        int number = taken.nextClearBit(0);
        reserve(number, owner, memoryMb);
        return number;
    }

    /**
     * Takes {@code wanted} for a session kept from an earlier run (no caps: it exists already), or the lowest free
     * number when {@code wanted} is taken or beyond the cap on sessions.
     *
     * @return the number the session now has
     */
    public synchronized int retake(int wanted, String owner, int memoryMb) {
        int number = wanted >= maxSessions || taken.get(wanted) ? taken.nextClearBit(0) : wanted;
        reserve(number, owner, memoryMb);
        return number;
    }

    private void reserve(int number, String owner, int memoryMb) {
        taken.set(number);
        reservations.put(number, new Reservation(owner, memoryMb));
    }

    /** Counts what {@code bytes} says the snapshots hold against the disk budget from now on. */
    public synchronized void countSnapshots(java.util.function.LongSupplier bytes) {
        snapshotBytes = bytes;
    }

    /**
     * Checks that a new snapshot of {@code bytes} fits the disk budget beside the sessions and the snapshots there are.
     *
     * @throws RequestException {@code disk_budget_exhausted}, saying what to do
     */
    public synchronized void admitSnapshot(long bytes) {
        long disk = (long) reservations.size() * quotaBytes + snapshotBytes.getAsLong();
        if (disk + bytes > diskBudgetBytes) {
            throw new RequestException(ErrorCode.DISK_BUDGET_EXHAUSTED, "sessions and snapshots already reserve "
                    + disk / (1 << 20) + " of the " + diskBudgetBytes / (1 << 20) + " MiB of disk the server gives"
                    + " them and this snapshot holds " + Math.max(1, bytes >> 20) + " MiB: delete a snapshot or a"
                    + " session first");
        }
    }

    /** Frees {@code number} and what it reserved. */
    public synchronized void release(int number) {
        taken.clear(number);
        reservations.remove(number);
    }
}
