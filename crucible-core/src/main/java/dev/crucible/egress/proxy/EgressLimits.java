package dev.crucible.egress.proxy;

import java.time.Duration;

/**
 * One sandbox's egress caps, enforced by its {@link EgressProxy}.
 *
 * @param maxConnections connections open at once (requests being read and tunnels); more are answered 429
 * @param maxBytes bytes relayed over the proxy's life, both directions, request heads included; a relay that reaches
 *     it is cut and new requests are refused ({@link dev.crucible.egress.policy.EgressReason#BYTE_CAP})
 * @param idleTimeout a connection with no byte read or written for this long is closed
 * @param connectTimeout how long to wait for each address of the target to accept
 * @param maxHeadBytes largest request head (request line and headers); larger is answered 431
 * @param maxDecisions decisions kept for {@link EgressProxy#decisions()} (oldest dropped first; counters count all)
 */
public record EgressLimits(int maxConnections, long maxBytes, Duration idleTimeout, Duration connectTimeout,
        int maxHeadBytes, int maxDecisions) {
    public EgressLimits {
        if (maxConnections < 1 || maxBytes < 1 || maxHeadBytes < 256 || maxDecisions < 1) {
            throw new IllegalArgumentException("egress limits must be positive (a head at least 256 bytes): " + this);
        }
        if (idleTimeout.isNegative() || idleTimeout.isZero() || connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException("egress timeouts must be positive: " + this);
        }
    }

    /** 16 connections, 2 GiB, 60 s idle, 10 s to connect, 16 KiB heads, 256 decisions kept. */
    public static EgressLimits defaults() {
        return new EgressLimits(16, 2L << 30, Duration.ofSeconds(60), Duration.ofSeconds(10), 16 * 1024, 256);
    }

    public EgressLimits withMaxConnections(int max) {
        return new EgressLimits(max, maxBytes, idleTimeout, connectTimeout, maxHeadBytes, maxDecisions);
    }

    public EgressLimits withMaxBytes(long max) {
        return new EgressLimits(maxConnections, max, idleTimeout, connectTimeout, maxHeadBytes, maxDecisions);
    }

    public EgressLimits withIdleTimeout(Duration timeout) {
        return new EgressLimits(maxConnections, maxBytes, timeout, connectTimeout, maxHeadBytes, maxDecisions);
    }
}
