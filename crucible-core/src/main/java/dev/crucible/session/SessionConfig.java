package dev.crucible.session;

import dev.crucible.session.spec.SessionLimits;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How sessions are kept.
 *
 * @param dataDir where sessions live ({@code sessions/<id>/}: metadata, the cell log, the workspace); survives
 *     restarts
 * @param maxSessions sessions at once, over all tokens (at most 3000: each has its own uid)
 * @param maxPerOwner sessions at once per token
 * @param idleTimeout a session unused this long is removed (a request may ask for another, up to maxLifetime)
 * @param maxLifetime a session is removed this long after its creation, used or not
 * @param maxCellBytes the largest cell (its code, UTF-8)
 * @param maxFileBytes the largest upload or download
 * @param workspaceQuota uploads are refused past this many bytes in a workspace
 * @param grace how long an interrupted cell may take to stop before the session is restarted
 * @param limits default limits of a session
 * @param reapEvery how often expired sessions are looked for
 * @param memoryBudgetMb the sum of the memory limits of all sessions may not pass this (each limit is enforced by
 *     the session's own cgroup, so the sum bounds what sessions can take); 0 = the host's memory less 1 GiB
 * @param diskBudgetBytes the sum of the workspace quotas of all sessions may not pass this (each quota is enforced
 *     by the workspace's own file system when loop mounts work); 0 = 90% of the data directory's file system
 */
public record SessionConfig(
        Path dataDir, int maxSessions, int maxPerOwner, Duration idleTimeout, Duration maxLifetime, int maxCellBytes,
        long maxFileBytes, long workspaceQuota, Duration grace, SessionLimits limits, Duration reapEvery,
        long memoryBudgetMb, long diskBudgetBytes) {
    /**
     * How long a session's interpreter may take to start and say it is ready (a resume, a restart after a stuck or dead
     * one): the part of a cell's answer beyond its timeout and grace that a replacement may add.
     */
    public static final long RESTART_BOUND_MS = 20_000;

    public SessionConfig {
        if (maxSessions < 1 || maxSessions > 3000) {
            throw new IllegalArgumentException("maxSessions must be between 1 and 3000");
        }
    }

    /** Defaults: 1000 sessions (250 per token), 30 min idle, 24 h life, 1 MiB cells, 32 MiB files, 1 GiB quota. */
    public static SessionConfig defaults(Path dataDir) {
        return new SessionConfig(dataDir, 1000, 250, Duration.ofMinutes(30), Duration.ofHours(24), 1024 * 1024,
                32L * 1024 * 1024, 1024L * 1024 * 1024, Duration.ofSeconds(2), SessionLimits.DEFAULT, Duration.ofSeconds(5), 0, 0);
    }

    public SessionConfig withDataDir(Path dir) {
        return new SessionConfig(dir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes);
    }

    public SessionConfig withMaxSessions(int global, int perOwner) {
        return new SessionConfig(dataDir, global, perOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes);
    }

    public SessionConfig withTimes(Duration idle, Duration lifetime, Duration reap) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idle, lifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reap, memoryBudgetMb, diskBudgetBytes);
    }

    public SessionConfig withCaps(int cellBytes, long fileBytes, long quota) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, cellBytes, fileBytes,
                quota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes);
    }

    /** Budgets over all sessions: 0 leaves one automatic (see the components). */
    public SessionConfig withBudgets(long memoryMb, long diskBytes) {
        if (memoryMb < 0 || diskBytes < 0) {
            throw new IllegalArgumentException("session budgets must be positive (0 = automatic)");
        }
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryMb, diskBytes);
    }

    /** The session numbers and budgets of this configuration (the automatic budgets from the host and {@code store}). */
    public dev.crucible.session.budget.SessionNumbers numbers(dev.crucible.session.store.SessionStore store)
            throws java.io.IOException {
        return dev.crucible.session.budget.SessionNumbers.of(maxSessions, maxPerOwner, memoryBudgetMb, diskBudgetBytes,
                workspaceQuota, store);
    }
}
