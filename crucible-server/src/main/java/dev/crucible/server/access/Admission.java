package dev.crucible.server.access;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Limits;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Back-pressure: at most {@code running} executions at once and {@code queued} more waiting; beyond that 429 with
 * Retry-After. After {@link #close()} new work gets 503 and {@link #awaitDrained} waits for the rest by the clock
 * given, so a test advances time instead of waiting for a grace period. Thread-safe.
 */
public final class Admission {
    /** How often a drain re-reads its clock: a clock moved by a test is noticed within this. */
    private static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final Semaphore turns;
    private final int maxRunning;
    private final int maxQueued;
    private final InstantSource clock;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition idle = lock.newCondition();
    private volatile boolean closed;

    /**
     * @param running how many runs proceed at once
     * @param queued how many more may wait for a turn
     * @param clock what a drain's grace is measured by
     */
    public Admission(int running, int queued, InstantSource clock) {
        this.turns = new Semaphore(running, true);
        this.maxRunning = running;
        this.maxQueued = queued;
        this.clock = clock;
    }

    /** A turn to run, waiting at most as long as a run of the default limits may take; close it when done. */
    AutoCloseable enter() throws InterruptedException {
        return enter(Limits.DEFAULT.timeoutMs());
    }

    /**
     * A turn for a run of {@code timeoutMs}; close it when done. A request waits for its turn at most its timeout plus
     * {@link Limits#GRACE_MS}: its answer is bounded end to end even when every turn is held.
     *
     * @throws RequestException 429 when the queue is full, 503 {@code queue_timeout} when no turn came in time, 503 when
     *     draining
     */
    public AutoCloseable enter(long timeoutMs) throws InterruptedException {
        if (closed) {
            throw new RequestException(ErrorCode.SHUTTING_DOWN, "the server is shutting down");
        }
        if (!turns.tryAcquire()) {
            if (waiting.incrementAndGet() > maxQueued) {
                left(waiting);
                throw new RequestException(ErrorCode.TOO_MANY_REQUESTS, "all sandboxes are busy and the queue is full");
            }
            long wait = timeoutMs + Limits.GRACE_MS;
            try {
                if (!turns.tryAcquire(wait, TimeUnit.MILLISECONDS)) {
                    throw new RequestException(ErrorCode.QUEUE_TIMEOUT, "no sandbox became free within " + wait
                            + " ms (the request's timeout_ms plus " + Limits.GRACE_MS + " ms); all " + maxRunning
                            + " were busy: retry later, or send less at once");
                }
            } finally {
                left(waiting);
            }
        }
        inFlight.incrementAndGet();
        return () -> {
            left(inFlight);
            turns.release();
        };
    }

    private void left(AtomicInteger counter) {
        if (counter.decrementAndGet() == 0) {
            lock.lock();
            try {
                idle.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** How many wait for a turn now. */
    public int queued() {
        return waiting.get();
    }

    /** How many runs hold a turn now. */
    public int running() {
        return inFlight.get();
    }

    /** How many run at once (the capacity a balancer or a batch client spreads work by). */
    public int maxRunning() {
        return maxRunning;
    }

    /** How many may wait for a turn at most. */
    public int maxQueued() {
        return maxQueued;
    }

    /** Whether new work is refused (a drain has begun). */
    public boolean closed() {
        return closed;
    }

    /** Whether anything runs or waits. */
    public boolean busy() {
        return running() > 0 || queued() > 0;
    }

    /** Refuses new work from now on (503). */
    public void close() {
        closed = true;
    }

    /**
     * Waits until nothing runs or waits, or until {@code grace} has passed on the clock.
     *
     * @return whether it drained in time
     */
    public boolean awaitDrained(Duration grace) throws InterruptedException {
        return awaitDrainedUntil(clock.instant().plus(grace));
    }

    /** As {@link #awaitDrained(Duration)}, until {@code deadline} on the clock. */
    boolean awaitDrainedUntil(Instant deadline) throws InterruptedException {
        lock.lock();
        try {
            while (busy()) {
                if (!clock.instant().isBefore(deadline)) {
                    return false;
                }
                idle.awaitNanos(RECHECK_NANOS);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }
}
