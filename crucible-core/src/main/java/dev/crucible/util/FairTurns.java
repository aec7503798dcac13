package dev.crucible.util;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.ToIntFunction;

/**
 * Turns at something scarce (a run's sandbox, a session's making), shared fairly between keys (tokens): at most
 * {@link Limits#running} held at once, at most {@link Limits#queued} waiting in all and {@link Limits#queuedPerKey} of
 * one key; a key holds at most {@link Limits#runningPerKey} at once. A freed turn goes to the keys that wait in turn
 * (deficit round robin: a key of weight {@code w} is given up to {@code w} turns before the next key's), first come
 * first served within a key; so one key's burst of hundreds delays another key's single request by at most one turn.
 *
 * <p>Every refusal says which limit and when to come back: {@code 429 too_many_requests} when a queue is full, {@code
 * 503 queue_timeout} when no turn came within the wait, each with a {@code Retry-After} estimated from how long turns
 * are held now (an average over the last ones) and how many wait ahead. Thread-safe.
 */
public final class FairTurns {
    /**
     * The limits: {@code running} turns at once, {@code queued} waiting in all; of one key {@code runningPerKey} at once
     * and {@code queuedPerKey} waiting (each at most its total).
     */
    public record Limits(int running, int queued, int runningPerKey, int queuedPerKey) {
        public Limits {
            if (running < 1 || queued < 0 || runningPerKey < 1 || queuedPerKey < 0) {
                throw new IllegalArgumentException("running and runningPerKey >= 1, queued and queuedPerKey >= 0");
            }
            runningPerKey = Math.min(runningPerKey, running);
            queuedPerKey = Math.min(queuedPerKey, queued);
        }

        /** {@code running} at once and {@code queued} waiting; a key may hold every turn and three quarters of the queue. */
        public static Limits of(int running, int queued) {
            return new Limits(running, queued, running, Math.max(1, queued - queued / 4));
        }
    }

    /** Why a request was refused, as {@code /metrics} counts them. */
    public enum Refusal { QUEUE_FULL, KEY_QUEUE_FULL, WAIT_TIMEOUT, CLOSED }

    /** A turn held; closing it gives it to the next waiting key. Closing twice is harmless. */
    public interface Turn extends AutoCloseable {
        @Override
        void close();

        /**
         * This turn's fair share of a CPU in percent of a whole turn's, now: {@code 100 / n} while its key holds {@code
         * n} turns (this one included) and another key holds one too, else 100; it changes as turns are given and
         * given back. Work done under a key's turns at these weights gets the cores split between keys, not between
         * turns.
         */
        int share();
    }

    private static final class Waiter {
        final String key;
        final Condition granted;
        boolean done;

        Waiter(String key, Condition granted) {
            this.key = key;
            this.granted = granted;
        }
    }

    private static final long MAX_RETRY_S = 300;

    private final String what;
    private final Limits limits;
    private final ToIntFunction<String> weight;
    private final LongSupplier nanoTime;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition idle = lock.newCondition();
    private final Map<String, ArrayDeque<Waiter>> waiting = new HashMap<>();
    /** Keys with waiters, in the order they are served next. */
    private final ArrayDeque<String> rotation = new ArrayDeque<>();
    private final Map<String, Integer> held = new HashMap<>();
    /** The shares of the turns held now, by key ({@link Turn#share}). */
    private final Map<String, List<AtomicInteger>> shares = new HashMap<>();
    private final Map<String, Integer> credit = new HashMap<>();
    private final EnumMap<Refusal, Long> refusals = new EnumMap<>(Refusal.class);
    private int running;
    private int queued;
    private long waits;
    private long waitedNanos;
    /** How long a turn is held, on average over the last ones (nanos); 0 before the first. */
    private double holdNanos;
    private boolean closed;

    /**
     * @param what what a turn is for, as a refusal names it ("runs", "session creates")
     * @param weight each key's weight (its share of the turns while keys wait); at least 1
     * @param nanoTime what waits and holds are measured by for the figures and Retry-After (a test's ticker); a
     *     request's wait itself is bounded by the real clock
     */
    public FairTurns(String what, Limits limits, ToIntFunction<String> weight, LongSupplier nanoTime) {
        this.what = what;
        this.limits = limits;
        this.weight = weight;
        this.nanoTime = nanoTime;
    }

    /** As {@link #FairTurns(String, Limits, ToIntFunction, LongSupplier)}, every key of weight 1, on the real clock. */
    public FairTurns(String what, Limits limits) {
        this(what, limits, key -> 1, System::nanoTime);
    }

    /**
     * A turn for {@code key}, waiting for it at most {@code maxWaitMs}.
     *
     * @throws RequestException {@code too_many_requests} (429) when the queue or the key's share of it is full,
     *     {@code queue_timeout} (503) when no turn came in time, {@code shutting_down} (503) once closed; each with
     *     a Retry-After
     */
    public Turn enter(String key, long maxWaitMs) throws InterruptedException {
        long start = nanoTime.getAsLong();
        Waiter me;
        lock.lock();
        try {
            if (closed) {
                throw refuse(Refusal.CLOSED, ErrorCode.SHUTTING_DOWN, "the server is shutting down", 0);
            }
            ArrayDeque<Waiter> mine = waiting.get(key);
            if (queued == 0 && running < limits.running() && heldBy(key) < limits.runningPerKey()) {
                return take(key, start);
            }
            if (queued >= limits.queued()) {
                throw refuse(Refusal.QUEUE_FULL, ErrorCode.TOO_MANY_REQUESTS, "the queue of " + what + " is full ("
                        + running + " running, " + queued + " waiting, the most that may)", queued);
            }
            if (mine != null && mine.size() >= limits.queuedPerKey()) {
                throw refuse(Refusal.KEY_QUEUE_FULL, ErrorCode.TOO_MANY_REQUESTS, "this token has " + mine.size() + " "
                        + what + " waiting already, the most one token may", mine.size());
            }
            me = new Waiter(key, lock.newCondition());
            if (mine == null) {
                mine = new ArrayDeque<>();
                waiting.put(key, mine);
                rotation.addLast(key);
            }
            mine.addLast(me);
            queued++;
            dispatch();
            long left = TimeUnit.MILLISECONDS.toNanos(maxWaitMs);
            try {
                while (!me.done && left > 0) {
                    left = me.granted.awaitNanos(left);
                }
            } catch (InterruptedException e) { // never leaves holding a turn, nor in the queue
                if (me.done) {
                    release(key);
                } else {
                    leaveQueue(me);
                }
                throw e;
            }
            if (!me.done) {
                leaveQueue(me);
                throw refuse(Refusal.WAIT_TIMEOUT, ErrorCode.QUEUE_TIMEOUT, "no turn for " + what + " came within "
                        + maxWaitMs + " ms (" + running + " running, " + queued + " waiting)", queued);
            }
            return turn(key, start);
        } finally {
            lock.unlock();
        }
    }

    /** Counts a turn {@code key} takes now, with no wait. Under the lock. */
    private Turn take(String key, long start) {
        running++;
        held.merge(key, 1, Integer::sum);
        return turn(key, start);
    }

    /** The handle of a turn given to {@code key}, asked for at {@code start}. Under the lock. */
    private Turn turn(String key, long start) {
        long given = nanoTime.getAsLong();
        waits++;
        waitedNanos += given - start;
        AtomicInteger share = new AtomicInteger(100); // written under the lock, read by the turn's holder at any time
        shares.computeIfAbsent(key, k -> new ArrayList<>()).add(share);
        reshare();
        return new Turn() {
            private boolean closed;

            @Override
            public int share() {
                return share.get();
            }

            @Override
            public void close() {
                lock.lock();
                try {
                    if (closed) {
                        return;
                    }
                    closed = true;
                    long hold = nanoTime.getAsLong() - given;
                    holdNanos = holdNanos == 0 ? hold : holdNanos * 0.9 + hold * 0.1;
                    List<AtomicInteger> mine = shares.get(key);
                    mine.remove(share);
                    if (mine.isEmpty()) {
                        shares.remove(key);
                    }
                    release(key);
                    reshare();
                } finally {
                    lock.unlock();
                }
            }
        };
    }

    /** Sets every held turn's share as {@link Turn#share} says: 100 while one key alone holds turns. Under the lock. */
    private void reshare() {
        boolean alone = shares.size() <= 1;
        for (List<AtomicInteger> turns : shares.values()) {
            int each = alone ? 100 : Math.max(1, 100 / turns.size());
            turns.forEach(share -> share.set(each));
        }
    }

    /** Gives back a turn {@code key} held: to the next waiting key, if any. Under the lock. */
    private void release(String key) {
        running--;
        held.merge(key, -1, (a, b) -> a + b == 0 ? null : a + b);
        dispatch();
        if (running == 0 && queued == 0) {
            idle.signalAll();
        }
    }

    /** Gives free turns to waiting keys in turn, each up to its weight before the next. Under the lock. */
    private void dispatch() {
        int skipped = 0;
        while (running < limits.running() && !rotation.isEmpty() && skipped < rotation.size()) {
            String key = rotation.peekFirst();
            if (heldBy(key) >= limits.runningPerKey()) { // at its own cap: the next key's turn
                rotation.addLast(rotation.pollFirst());
                skipped++;
                continue;
            }
            skipped = 0;
            ArrayDeque<Waiter> line = waiting.get(key);
            Waiter next = line.pollFirst();
            queued--;
            running++;
            held.merge(key, 1, Integer::sum);
            next.done = true;
            next.granted.signal();
            int given = credit.merge(key, 1, Integer::sum);
            if (line.isEmpty()) {
                waiting.remove(key);
                rotation.pollFirst();
                credit.remove(key);
            } else if (given >= Math.max(1, weight.applyAsInt(key))) {
                credit.remove(key);
                rotation.addLast(rotation.pollFirst());
            }
        }
    }

    private void leaveQueue(Waiter me) {
        ArrayDeque<Waiter> line = waiting.get(me.key);
        if (line != null && line.remove(me)) {
            queued--;
            if (line.isEmpty()) {
                waiting.remove(me.key);
                rotation.remove(me.key);
                credit.remove(me.key);
            }
            if (running == 0 && queued == 0) {
                idle.signalAll();
            }
        }
    }

    private int heldBy(String key) {
        return held.getOrDefault(key, 0);
    }

    /** A refusal, counted, with a Retry-After for {@code ahead} waiting before a retry. Under the lock. */
    private RequestException refuse(Refusal why, ErrorCode code, String message, int ahead) {
        refusals.merge(why, 1L, Long::sum);
        long retry = retryAfterSeconds(ahead);
        return new RequestException(code, message + ": retry in " + retry + " s, or send less at once", (int) retry);
    }

    /** When a request that finds {@code ahead} waiting may expect a turn, in whole seconds (at least 1). */
    private long retryAfterSeconds(int ahead) {
        double nanos = holdNanos * (ahead + 1) / limits.running();
        return Math.max(1, Math.min(MAX_RETRY_S, (long) Math.ceil(nanos / 1e9)));
    }

    /** Refuses new requests from now on ({@code shutting_down}); turns held and waiting go on. */
    public void close() {
        lock.lock();
        try {
            closed = true;
        } finally {
            lock.unlock();
        }
    }

    /** Waits until no turn is held and none waits, at most {@code nanos}; whether it came to that. */
    public boolean awaitIdle(long nanos) throws InterruptedException {
        lock.lock();
        try {
            long left = nanos;
            while ((running > 0 || queued > 0) && left > 0) {
                left = idle.awaitNanos(left);
            }
            return running == 0 && queued == 0;
        } finally {
            lock.unlock();
        }
    }

    /** What the turns are now, for {@code /readyz} and {@code /metrics}. */
    public Stats stats() {
        lock.lock();
        try {
            return new Stats(running, queued, waiting.size(), waits, waitedNanos / 1_000_000, new EnumMap<>(refusals),
                    retryAfterSeconds(queued));
        } finally {
            lock.unlock();
        }
    }

    /** The limits these turns keep. */
    public Limits limits() {
        return limits;
    }

    /**
     * A moment's figures: turns held, requests waiting, keys waiting, turns given so far and the time they waited in
     * all (ms), refusals by reason, and the Retry-After a refusal would say now.
     */
    public record Stats(int running, int queued, int keysWaiting, long given, long waitedMs,
            Map<Refusal, Long> refusals, long retryAfterS) {
        /** Refusals of {@code why} so far. */
        public long refused(Refusal why) {
            return refusals.getOrDefault(why, 0L);
        }
    }
}
