package dev.crucible.session.spec;

import dev.crucible.sandbox.uid.UidLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;

/**
 * How sessions are kept.
 *
 * @param dataDir where sessions live ({@code sessions/<id>/}: metadata, the cell log, the workspace); survives
 *     restarts
 * @param maxSessions sessions at once, over all tokens (at most {@code UidLayout.MAX_SESSIONS}: each has its own uid)
 * @param maxPerOwner sessions at once per token
 * @param idleTimeout a session unused this long is removed (a request may ask for another, up to maxLifetime)
 * @param maxLifetime a session is removed this long after its creation, used or not
 * @param maxCellBytes the largest cell (its code, UTF-8)
 * @param maxFileBytes the largest upload or download
 * @param workspaceQuota uploads are refused past this many bytes in a workspace
 * @param grace how long an interrupted cell may take to stop before the session is restarted
 * @param limits default limits of a session
 * @param reapEvery how often expired sessions are looked for
 * @param memoryBudgetMb the memory all sessions together may use: their cgroups nest in one held to it, where the
 *     kernel reclaims and OOM-kills when they overcommit (each session keeps its own limit too), and the sum of their
 *     requests may not pass it; 0 = the host's memory less 1 GiB
 * @param diskBudgetBytes the sum of the workspace quotas of all sessions may not pass this (each quota is enforced
 *     by the workspace's own file system when loop mounts work); 0 = no cap but the data directory's free room
 *     (each create needs its quota free beside what creates under way were promised, above a headroom)
 * @param memoryRequestMb what a session is admitted for against the memory budget: what it is expected to use, as a
 *     Kubernetes request (its limit is what it may use); a session whose limit is smaller is admitted for its limit;
 *     0 = every session for its whole limit (nothing overcommitted)
 * @param spares sessions of the default limits kept made ahead (workspace, root and interpreter started), one per
 *     entry, each of a language, image and tier ({@link Spare}), so that a create that asks for that and nothing else
 *     takes one at once; each counts against the caps and budgets as a session does; empty = none
 */
public record SessionConfig(
        Path dataDir, int maxSessions, int maxPerOwner, Duration idleTimeout, Duration maxLifetime, int maxCellBytes,
        long maxFileBytes, long workspaceQuota, Duration grace, SessionLimits limits, Duration reapEvery,
        long memoryBudgetMb, long diskBudgetBytes, long memoryRequestMb, List<Spare> spares) {
    /**
     * One session kept made ahead: what a create asks for to take it. {@code language} null is the default (Python),
     * {@code image} null the host's file system, {@code isolation} null the runtime's own tier; the limits are always
     * the defaults and there is never network.
     */
    public record Spare(String language, String image, String isolation) {
        /** A Python session on the host's file system: what a create asking for nothing takes. */
        public static final Spare PYTHON = new Spare("python", null, null);
    }

    /**
     * How long a session's interpreter may take to start and say it is ready (a resume, a restart after a stuck or dead
     * one): the part of a cell's answer beyond its timeout and grace that a replacement may add.
     */
    public static final long RESTART_BOUND_MS = 20_000;
    /**
     * What an idle Python session uses, rounded up: a PSS of 6.2 MiB, about 8 MiB charged to its cgroup (measured by
     * {@code crucible bench --sessions --idle}): its request, unless the operator says otherwise.
     */
    public static final long DEFAULT_MEMORY_REQUEST_MB = 10;

    public SessionConfig {
        if (maxSessions < 1 || maxSessions > UidLayout.MAX_SESSIONS) { // each has a uid of its own
            throw new IllegalArgumentException("maxSessions must be between 1 and " + UidLayout.MAX_SESSIONS);
        }
        spares = spares == null ? List.of() : List.copyOf(spares);
        if (spares.size() > 16) {
            throw new IllegalArgumentException("spare sessions must be between 0 and 16");
        }
    }

    /**
     * Defaults: 3000 sessions (250 per token), 30 min idle, 24 h life, 1 MiB cells, 32 MiB files, 1 GiB quota, no
     * spares (a server keeps one: {@code ServerConfig}).
     */
    public static SessionConfig defaults(Path dataDir) {
        return new SessionConfig(dataDir, 3000, 250, Duration.ofMinutes(30), Duration.ofHours(24), 1024 * 1024,
                32L * 1024 * 1024, 1024L * 1024 * 1024, Duration.ofSeconds(2), SessionLimits.DEFAULT, Duration.ofSeconds(5), 0, 0,
                DEFAULT_MEMORY_REQUEST_MB, List.of());
    }

    public SessionConfig withDataDir(Path dir) {
        return new SessionConfig(dir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes, memoryRequestMb, spares);
    }

    public SessionConfig withMaxSessions(int global, int perOwner) {
        return new SessionConfig(dataDir, global, perOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes, memoryRequestMb, spares);
    }

    public SessionConfig withTimes(Duration idle, Duration lifetime, Duration reap) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idle, lifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reap, memoryBudgetMb, diskBudgetBytes, memoryRequestMb, spares);
    }

    public SessionConfig withCaps(int cellBytes, long fileBytes, long quota) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, cellBytes, fileBytes,
                quota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes, memoryRequestMb, spares);
    }

    /** Keeps {@code n} Python sessions made ahead (0: none). */
    public SessionConfig withSpares(int n) {
        if (n < 0 || n > 16) {
            throw new IllegalArgumentException("spare sessions must be between 0 and 16");
        }
        return withSpares(Collections.nCopies(n, Spare.PYTHON));
    }

    /** Keeps these sessions made ahead, one each (a kind listed twice is kept twice). */
    public SessionConfig withSpares(List<Spare> kept) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes, memoryRequestMb, kept);
    }

    /** Budgets over all sessions: 0 leaves one automatic (see the components). */
    public SessionConfig withBudgets(long memoryMb, long diskBytes) {
        if (memoryMb < 0 || diskBytes < 0) {
            throw new IllegalArgumentException("session budgets must be positive (0 = automatic)");
        }
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryMb, diskBytes, memoryRequestMb, spares);
    }

    /** What each session is admitted for: {@code mb} of its memory (0 = its whole limit). */
    public SessionConfig withMemoryRequest(long mb) {
        if (mb < 0) {
            throw new IllegalArgumentException("a session's memory request is 0 (its whole limit) or more MiB");
        }
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, grace, limits, reapEvery, memoryBudgetMb, diskBudgetBytes, mb, spares);
    }
}
