package dev.crucible.server.access;

import dev.crucible.util.FairTurns;

/**
 * How turns are shared between tokens beyond the server's totals: of the runs ({@code --max-concurrent},
 * {@code --max-queued}), what one token may hold and queue; of the session creates, how many are made at once, how many
 * more wait, what one token may queue, and how long a create waits for its turn. A 0 takes the default the field
 * names.
 *
 * @param runningPerToken runs one token holds at once; 0: every turn but one when the server has several tokens (so
 *     another token's run starts at once, whatever one token's burst holds), every turn with one token or none
 * @param queuedPerToken runs one token may have waiting; 0: three quarters of the queue, so one token's burst
 *     leaves room for the others'
 * @param creating sessions made at once; 0: one per core (a create is CPU: a root, an interpreter started)
 * @param createsQueued session creates that may wait for their turn; 0: {@value #CREATES_QUEUED}
 * @param createsQueuedPerToken creates one token may have waiting; 0: three quarters of {@code createsQueued}
 * @param createWaitS how long a create waits for its turn before {@code queue_timeout}; 0: {@value #CREATE_WAIT_S} s
 *     (E2B's SDKs give a request 60 s and ask again within them after a 429)
 */
public record Fairness(int runningPerToken, int queuedPerToken, int creating, int createsQueued,
        int createsQueuedPerToken, int createWaitS) {
    public static final int CREATES_QUEUED = 1000;
    public static final int CREATE_WAIT_S = 30;

    public Fairness {
        if (runningPerToken < 0 || queuedPerToken < 0 || creating < 0 || createsQueued < 0 || createsQueuedPerToken < 0
                || createWaitS < 0) {
            throw new IllegalArgumentException("every fairness setting is 0 (its default) or more");
        }
    }

    /** Every default. */
    public static Fairness defaults() {
        return new Fairness(0, 0, 0, 0, 0, 0);
    }

    /** The runs' turns within the server's totals, {@code running} at once and {@code queued} waiting. */
    public FairTurns.Limits runs(int running, int queued) {
        FairTurns.Limits d = FairTurns.Limits.of(running, queued);
        return new FairTurns.Limits(running, queued, runningPerToken > 0 ? runningPerToken : d.runningPerKey(),
                queuedPerToken > 0 ? queuedPerToken : d.queuedPerKey());
    }

    /** The session creates' turns. */
    public FairTurns.Limits creates() {
        int at = creating > 0 ? creating : Runtime.getRuntime().availableProcessors();
        int queued = createsQueued > 0 ? createsQueued : CREATES_QUEUED;
        FairTurns.Limits d = FairTurns.Limits.of(at, queued);
        return new FairTurns.Limits(at, queued, at, createsQueuedPerToken > 0 ? createsQueuedPerToken
                : d.queuedPerKey());
    }

    /** How long a create waits for its turn, in ms. */
    public long createWaitMs() {
        return (createWaitS > 0 ? createWaitS : CREATE_WAIT_S) * 1000L;
    }
}
