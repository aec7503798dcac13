package dev.crucible.session;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Removes sessions idle past their timeout or past their lifetime, on a daemon thread every {@code every}; a session
 * running a cell is left for the next round. Time is the sessions' clock, so a test advances it and calls
 * {@link #reap()} instead of waiting.
 */
final class SessionReaper implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.session");

    private final Supplier<List<Session>> sessions;
    private final Consumer<Session> remove;
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "crucible-session-reaper");
        t.setDaemon(true);
        return t;
    });

    /** Reaps every {@code every} (at least 10 ms) from now on. */
    SessionReaper(Supplier<List<Session>> sessions, Consumer<Session> remove, Duration every) {
        this.sessions = sessions;
        this.remove = remove;
        long ms = Math.max(10, every.toMillis());
        thread.scheduleWithFixedDelay(this::reap, ms, ms, TimeUnit.MILLISECONDS);
    }

    /** One round: removes what has expired and is not running a cell. */
    void reap() {
        for (Session session : sessions.get()) {
            if (session.expired() && session.lock.tryLock()) {
                try {
                    if (session.expired()) {
                        LOG.log(System.Logger.Level.INFO, "removing expired session " + session.stored.id());
                        remove.accept(session);
                    }
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
