package dev.crucible.sandbox.zygote;

import dev.crucible.health.Replacements;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The bound on a zygote's answers (issue 25): every {@link #WATCH_MS}, a running zygote that died, or left a request
 * unanswered past its bound (a fork without "forked", a kill without "exit"), is handed to {@code replace}. One thread,
 * started with the first zygote.
 */
final class ZygoteWatchdog implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");
    /**
     * How long a stopped zygote (SIGSTOP, a tracer) may leave a request unanswered (a fork without "forked", a kill
     * without "exit") before it is killed and replaced. Its loop answers in microseconds when it runs.
     */
    static final long ANSWER_MS = 2_000;
    /**
     * How long a zygote that is not stopped may leave an answer owed before it is replaced all the same: one behind on
     * its requests on a busy host, or waiting in the kernel (a network namespace made while others are torn down can
     * wait seconds on the kernel's locks), is slow, not stuck, and the runs waiting on it are started again elsewhere
     * meanwhile ({@code Launched.TAKE_MS}); one whose loop is blocked for good is replaced at this bound.
     */
    static final long BUSY_ANSWER_MS = 30_000;
    private static final long WATCH_MS = 200;

    /** Gives up on a zygote of a kind and starts its successor ({@link Zygotes#replace}). */
    @FunctionalInterface
    interface Replace {
        void replace(List<Object> key, Zygote zygote, Replacements.Reason reason, String detail);
    }

    private final Map<List<Object>, Zygote> running;
    private final Replace replace;
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "crucible-zygote-watch");
        t.setDaemon(true);
        return t;
    });
    private final AtomicBoolean started = new AtomicBoolean();

    /** @param running the running zygotes by kind, read on every check */
    ZygoteWatchdog(Map<List<Object>, Zygote> running, Replace replace) {
        this.running = running;
        this.replace = replace;
    }

    /** Starts the checks, once. */
    void start() {
        if (started.compareAndSet(false, true)) {
            thread.scheduleWithFixedDelay(this::check, WATCH_MS, WATCH_MS, TimeUnit.MILLISECONDS);
        }
    }

    private void check() {
        try {
            long now = System.nanoTime();
            running.forEach((key, zygote) -> {
                long waited = zygote.unansweredFor(now) / 1_000_000;
                if (zygote.ended()) {
                    replace.replace(key, zygote, Replacements.Reason.DIED, "it ended");
                } else if (waited > ANSWER_MS && zygote.stopped()) {
                    replace.replace(key, zygote, Replacements.Reason.UNANSWERED, "a request has waited " + waited
                            + " ms for its answer, and it is stopped (SIGSTOP or a tracer)");
                } else if (waited > BUSY_ANSWER_MS) {
                    replace.replace(key, zygote, Replacements.Reason.UNANSWERED, "a request has waited " + waited
                            + " ms for its answer (the bound is " + BUSY_ANSWER_MS + " ms)");
                }
            });
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "the zygote watchdog failed a check", e);
        }
    }

    /** Stops the checks. */
    @Override
    public void close() {
        thread.shutdownNow();
    }
}
