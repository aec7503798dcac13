package dev.crucible.session;

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
 * @param graceMs how long an interrupted cell may take to stop before the session is restarted
 * @param limits default limits of a session
 * @param reapEvery how often expired sessions are looked for
 */
public record SessionConfig(
        Path dataDir, int maxSessions, int maxPerOwner, Duration idleTimeout, Duration maxLifetime, int maxCellBytes,
        long maxFileBytes, long workspaceQuota, long graceMs, SessionLimits limits, Duration reapEvery) {

    public SessionConfig {
        if (maxSessions < 1 || maxSessions > 3000) {
            throw new IllegalArgumentException("maxSessions must be between 1 and 3000");
        }
    }

    /** Defaults: 1000 sessions (250 per token), 30 min idle, 24 h life, 1 MiB cells, 32 MiB files, 1 GiB quota. */
    public static SessionConfig defaults(Path dataDir) {
        return new SessionConfig(dataDir, 1000, 250, Duration.ofMinutes(30), Duration.ofHours(24), 1024 * 1024,
                32L * 1024 * 1024, 1024L * 1024 * 1024, 2_000, SessionLimits.DEFAULT, Duration.ofSeconds(5));
    }

    public SessionConfig withMaxSessions(int global, int perOwner) {
        return new SessionConfig(dataDir, global, perOwner, idleTimeout, maxLifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, graceMs, limits, reapEvery);
    }

    public SessionConfig withTimes(Duration idle, Duration lifetime, Duration reap) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idle, lifetime, maxCellBytes, maxFileBytes,
                workspaceQuota, graceMs, limits, reap);
    }

    public SessionConfig withCaps(int cellBytes, long fileBytes, long quota) {
        return new SessionConfig(dataDir, maxSessions, maxPerOwner, idleTimeout, maxLifetime, cellBytes, fileBytes,
                quota, graceMs, limits, reapEvery);
    }
}
