package dev.crucible.session;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Removes sessions idle past their timeout or past their lifetime, on a daemon thread every {@code every} (pauses
 * instead one made with {@code on_idle: "pause"} that is idle, not at its end of life); a session running a cell is
 * left for the next round. Time is the sessions' clock, so a test advances it and calls
 * {@link #reap()} instead of waiting.
 */
final class SessionReaper implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.session");

    private final Supplier<List<Session>> sessions;
    private final Consumer<Session> remove;
    private final Pause pause;

    /** Pauses a session whose lock is held ({@code SessionRunner#pause}). */
    interface Pause {
        String pause(Session session) throws InterruptedException;
    }
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "crucible-session-reaper");
        t.setDaemon(true);
        return t;
    });

    /** Reaps every {@code every} (at least 10 ms) from now on. */
    SessionReaper(Supplier<List<Session>> sessions, Consumer<Session> remove, Pause pause, Duration every) {
        this.sessions = sessions;
        this.remove = remove;
        this.pause = pause;
        long ms = Math.max(10, every.toMillis());
        thread.scheduleWithFixedDelay(this::reap, ms, ms, TimeUnit.MILLISECONDS);
    }

    /** One round: removes what has expired and is not running a cell. */
    void reap() {
        for (Session session : sessions.get()) {
            if (session.expired() && session.lock.tryLock()) {
                try {
                    if (session.expired() && session.stored.pausesWhenIdle() && session.state() != Session.State.PAUSED
                            && session.clock().millis() < session.stored.endOfLifeMs()) { // idle, not at its end of life
                        LOG.log(System.Logger.Level.INFO, "pausing idle session " + session.stored.id() + ": "
                                + pause.pause(session));
                    } else if (session.expired()) {
                        LOG.log(System.Logger.Level.INFO, "removing expired session " + session.stored.id());
                        remove.accept(session);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot remove session " + session.stored.id(), e);
                } finally {
                    session.lock.unlock();
                }
            }
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
