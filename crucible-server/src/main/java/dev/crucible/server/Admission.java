package dev.crucible.server;

import dev.crucible.ErrorCode;
import dev.crucible.RequestException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Back-pressure: at most {@code running} executions at once and {@code queued} more waiting; beyond that 429 with
 * Retry-After. After {@link #close()} new work gets 503. Thread-safe.
 */
final class Admission {
    private final Semaphore turns;
    private final int maxQueued;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile boolean closed;

    Admission(int running, int queued) {
        this.turns = new Semaphore(running, true);
        this.maxQueued = queued;
    }

    /** A turn to run; close it when done. */
    AutoCloseable enter() throws InterruptedException {
        if (closed) {
            throw new RequestException(ErrorCode.SHUTTING_DOWN, "the server is shutting down");
        }
        if (!turns.tryAcquire()) {
            if (waiting.incrementAndGet() > maxQueued) {
                waiting.decrementAndGet();
                throw new RequestException(ErrorCode.TOO_MANY_REQUESTS, "all sandboxes are busy and the queue is full");
            }
            try {
                turns.acquire();
            } finally {
                waiting.decrementAndGet();
            }
        }
        inFlight.incrementAndGet();
        return () -> {
            inFlight.decrementAndGet();
            turns.release();
        };
    }

    int queued() {
        return waiting.get();
    }

    int running() {
        return inFlight.get();
    }

    void close() {
        closed = true;
    }
}
