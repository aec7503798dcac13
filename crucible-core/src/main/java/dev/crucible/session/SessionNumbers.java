package dev.crucible.session;

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
final class SessionNumbers {
    private record Reservation(String owner, int memoryMb) {}

    private final int maxSessions;
    private final int maxPerOwner;
    private final long memoryBudgetMb;
    private final long diskBudgetBytes;
    private final long quotaBytes;
    private final BitSet taken = new BitSet();
    private final Map<Integer, Reservation> reservations = new HashMap<>();

    SessionNumbers(int maxSessions, int maxPerOwner, long memoryBudgetMb, long diskBudgetBytes, long quotaBytes) {
        this.maxSessions = maxSessions;
        this.maxPerOwner = maxPerOwner;
        this.memoryBudgetMb = memoryBudgetMb;
        this.diskBudgetBytes = diskBudgetBytes;
        this.quotaBytes = Math.max(WorkspaceDisk.MIN_BYTES, quotaBytes);
    }

    /**
     * The numbers {@code config} allows, over its budgets or the automatic ones: the host's memory less 1 GiB (at least
     * 1 GiB), and 90% of the file system {@code store} keeps sessions on.
     */
    static SessionNumbers of(SessionConfig config, SessionStore store) throws IOException {
        long memoryBudgetMb = config.memoryBudgetMb() > 0 ? config.memoryBudgetMb() : Math.max(1024,
                ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                        .getTotalMemorySize() / (1024 * 1024) - 1024);
        long diskBudgetBytes = config.diskBudgetBytes() > 0 ? config.diskBudgetBytes() : store.defaultDiskBudget();
        return new SessionNumbers(config.maxSessions(), config.maxPerOwner(), memoryBudgetMb, diskBudgetBytes,
                config.workspaceQuota());
    }

    /**
     * Takes the lowest free number for a new session of {@code owner} with {@code memoryMb} of memory.
     *
     * @throws RequestException {@code too_many_sessions}, {@code memory_budget_exhausted} or
     *     {@code disk_budget_exhausted}, saying what to do
     */
    synchronized int take(String owner, int memoryMb) {
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
        long disk = (long) reservations.size() * quotaBytes;
        if (disk + quotaBytes > diskBudgetBytes) {
            throw new RequestException(ErrorCode.DISK_BUDGET_EXHAUSTED, "sessions already reserve " + disk / (1 << 20)
                    + " of the " + diskBudgetBytes / (1 << 20) + " MiB of disk the server gives them and each"
                    + " workspace takes " + quotaBytes / (1 << 20) + " MiB: delete a session or wait for idle ones to"
                    + " expire");
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
    synchronized int retake(int wanted, String owner, int memoryMb) {
        int number = wanted >= maxSessions || taken.get(wanted) ? taken.nextClearBit(0) : wanted;
        reserve(number, owner, memoryMb);
        return number;
    }

    private void reserve(int number, String owner, int memoryMb) {
        taken.set(number);
        reservations.put(number, new Reservation(owner, memoryMb));
    }

    /** Frees {@code number} and what it reserved. */
    synchronized void release(int number) {
        taken.clear(number);
        reservations.remove(number);
    }
}
