package dev.crucible.server.access;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.cgroup.CpuShare;
import dev.crucible.server.http.JsonObject;
import dev.crucible.util.FairTurns;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Back-pressure for stateless runs: {@link FairTurns} keyed by token, at most {@code running} executions at once and
 * {@code queued} more waiting, shared fairly between tokens (one token's burst delays another's single run by at most
 * one turn, and its runs together weigh one token's share of the cores: {@link CpuShare}); beyond that 429 with a Retry-After that says when. After {@link #close()} new work gets 503 and
 * {@link #awaitDrained} waits for the rest by the clock given, so a test advances time instead of waiting for a grace
 * period. Thread-safe.
 */
public final class Admission {
    /** How often a drain re-reads its clock: a clock moved by a test is noticed within this. */
    private static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final FairTurns turns;
    private final InstantSource clock;
    private volatile boolean closed;

    /**
     * @param running how many runs proceed at once
     * @param queued how many more may wait for a turn
     * @param clock what a drain's grace is measured by
     */
    public Admission(int running, int queued, InstantSource clock) {
        this(FairTurns.Limits.of(running, queued), clock);
    }

    /** Runs within {@code limits}, per token as they say. */
    public Admission(FairTurns.Limits limits, InstantSource clock) {
        this.turns = new FairTurns("runs", limits);
        this.clock = clock;
    }

    /** A turn to run, waiting at most as long as a run of the default limits may take; close it when done. */
    AutoCloseable enter() throws InterruptedException {
        return enter("", Limits.DEFAULT.timeoutMs());
    }

    /** As {@link #enter(String, long)} for no token in particular (a server without tokens, a CLI). */
    public AutoCloseable enter(long timeoutMs) throws InterruptedException {
        return enter("", timeoutMs);
    }

    /**
     * A turn of {@code owner}'s for a run of {@code timeoutMs}; close it when done. A request waits for its turn at
     * most its timeout plus {@link Limits#GRACE_MS}: its answer is bounded end to end even when every turn is held.
     *
     * @throws RequestException 429 when the queue (or the token's share of it) is full, 503 {@code queue_timeout} when
     *     no turn came in time, 503 when draining; each with a Retry-After
     */
    public AutoCloseable enter(String owner, long timeoutMs) throws InterruptedException {
        if (closed) {
            throw new RequestException(ErrorCode.SHUTTING_DOWN, "the server is shutting down");
        }
        FairTurns.Turn turn = turns.enter(owner, timeoutMs + Limits.GRACE_MS);
        // the run launched on this thread weighs its token's fair share of the cores (CpuShare)
        CpuShare.Scope share = CpuShare.set(turn::share);
        return () -> {
            share.close();
            turn.close();
        };
    }

    /** How many wait for a turn now. */
    public int queued() {
        return turns.stats().queued();
    }

    /** How many runs hold a turn now. */
    public int running() {
        return turns.stats().running();
    }

    /** How many run at once (the capacity a balancer or a batch client spreads work by). */
    public int maxRunning() {
        return turns.limits().running();
    }

    /** How many may wait for a turn at most. */
    public int maxQueued() {
        return turns.limits().queued();
    }

    /** The turns themselves: limits, waits and refusals by reason, for {@code /readyz} and {@code /metrics}. */
    public FairTurns turns() {
        return turns;
    }

    /** {@code turns} as {@code /readyz} shows them: limits, what they hold now, turns given, refusals by reason. */
    public static Map<String, Object> shown(FairTurns turns) {
        FairTurns.Stats now = turns.stats();
        FairTurns.Limits limits = turns.limits();
        Map<String, Object> refused = new LinkedHashMap<>();
        for (FairTurns.Refusal why : FairTurns.Refusal.values()) {
            refused.put(why.name().toLowerCase(Locale.ROOT), now.refused(why));
        }
        return JsonObject.of("running", now.running(), "queued", now.queued(), "max_running", limits.running(),
                "max_queued", limits.queued(), "max_running_per_token", limits.runningPerKey(), "max_queued_per_token",
                limits.queuedPerKey(), "given", now.given(), "waited_ms", now.waitedMs(), "retry_after_s",
                now.retryAfterS(), "refused", refused);
    }

    /** Whether new work is refused (a drain has begun). */
    public boolean closed() {
        return closed;
    }

    /** Whether anything runs or waits. */
    public boolean busy() {
        FairTurns.Stats now = turns.stats();
        return now.running() > 0 || now.queued() > 0;
    }

    /** Refuses new work from now on (503). */
    public void close() {
        closed = true;
        turns.close();
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
        while (!turns.awaitIdle(RECHECK_NANOS)) {
            if (!clock.instant().isBefore(deadline)) {
                return false;
            }
        }
        return true;
    }
}
