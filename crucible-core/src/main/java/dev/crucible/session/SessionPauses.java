package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.spec.PauseResult;
import java.util.concurrent.TimeUnit;

/**
 * Pausing and resuming one session (issue 30). A pause releases what the session holds but its files and record:
 * its sandbox and so its memory, and its cgroups; behind gVisor the sandbox is first saved whole (memory, variables,
 * background processes, open files) in the session's directory. The next call to the session, or a resume, brings it
 * back: from that memory when there is one, else as after a restart of the server (files kept, the logged cells
 * replayed for a session made with {@code restore: "replay"}). A paused session stays paused across restarts of the
 * server, and another replica sharing the data directory resumes it as well.
 */
public final class SessionPauses {
    /** How long a pause or resume waits for a cell or command of the session to end. */
    static final long BUSY_WAIT_MS = 30_000;

    private final Session session;
    private final SessionRunner runner;

    SessionPauses(Session session, SessionRunner runner) {
        this.session = session;
        this.runner = runner;
    }

    /**
     * Pauses the session; a session paused already stays as it is.
     *
     * @throws RequestException {@code session_busy} while a cell runs past {@link #BUSY_WAIT_MS}
     */
    public PauseResult pause() throws InterruptedException {
        long start = System.nanoTime();
        lock();
        try {
            String keeps = session.state == Session.State.PAUSED ? kept() : runner.pause(session);
            return new PauseResult(session.stored.id(), "paused", keeps, null, null, since(start));
        } finally {
            session.lock.unlock();
        }
    }

    /**
     * Resumes the session now rather than at its next call; one that is running stays as it is ({@code restored}
     * null).
     *
     * @throws RequestException {@code session_busy} as {@link #pause()}; {@code interpreter_unavailable} when no
     *     interpreter could be started
     */
    public PauseResult resume() throws InterruptedException {
        long start = System.nanoTime();
        lock();
        try {
            SessionRunner.Boot boot = runner.boot(session);
            if (boot.failure() != null) {
                throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, boot.failure());
            }
            session.touch();
            return new PauseResult(session.stored.id(), "running", null, boot.restored(), boot.replayed(),
                    since(start));
        } finally {
            session.lock.unlock();
        }
    }

    /** Whether the session is paused now. */
    public boolean paused() {
        return session.state == Session.State.PAUSED;
    }

    /** What a resume of a session paused already brings back. */
    private String kept() {
        return java.nio.file.Files.isDirectory(runner.memory(session)) ? "memory"
                : session.stored.restore().equals("replay") ? "replay" : "files";
    }

    private void lock() throws InterruptedException {
        if (!session.lock.tryLock(BUSY_WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new RequestException(ErrorCode.SESSION_BUSY, "a cell or command of this session is still running");
        }
        if (session.gone()) {
            session.lock.unlock();
            throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no session " + session.stored.id());
        }
    }

    private static long since(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}
