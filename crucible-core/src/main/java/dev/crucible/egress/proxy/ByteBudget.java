package dev.crucible.egress.proxy;

import java.util.concurrent.atomic.AtomicLong;

/** The bytes a proxy may still relay, shared by its connections. Thread-safe. */
final class ByteBudget {
    private final AtomicLong remaining;

    ByteBudget(long bytes) {
        this.remaining = new AtomicLong(bytes);
    }

    /** Takes up to {@code bytes}; returns how many were granted (fewer only when the budget runs out). */
    long take(long bytes) {
        long before = remaining.getAndAdd(-bytes);
        return Math.clamp(before, 0, bytes);
    }

    boolean spent() {
        return remaining.get() <= 0;
    }
}
