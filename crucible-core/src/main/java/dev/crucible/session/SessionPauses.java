package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.spec.ForkResult;
import dev.crucible.session.spec.PauseResult;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.store.SavedMemory;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.WorkspaceCopy;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Pausing and resuming one session (issue 30). A pause releases what the session holds but its files and record:
 * its sandbox and so its memory, and its cgroups; behind gVisor the sandbox is first saved whole (memory, variables,
 * background processes, open files) in the session's directory. The next call to the session, or a resume, brings it
 * back: from that memory when there is one, else as after a restart of the server (files kept, the logged cells
 * replayed for a session made with {@code restore: "replay"}). A paused session stays paused across restarts of the
 * server, and another replica sharing the data directory resumes it as well.
 *
 * <p>A fork pauses the session and makes new sessions of the same owner, runtime, limits and restore mode (and egress
 * no wider), each with its own copy of the workspace, of the logged cells and, behind gVisor, of the saved memory:
 * each comes up from that copy at its first call, as the parent does at its next. A root of its own (namespaces) is
 * not copied: a fork's starts fresh.
 */
public final class SessionPauses {
    /** How long a pause or resume waits for a cell or command of the session to end. */
    static final long BUSY_WAIT_MS = 30_000;

    /** The most forks one call makes. */
    public static final int MAX_FORKS = 16;

    private final Session session;
    private final SessionRunner runner;
    private final Creator creator;
    private final java.util.function.Consumer<Session> remover;
    private final Sandbox sandbox;
    private final SessionStore store;

    /** Makes a new session of the same owner, without an interpreter yet. */
    interface Creator {
        Session create(SessionManager.CreateRequest request) throws InterruptedException;
    }

    SessionPauses(Session session, SessionRunner runner, Creator creator, java.util.function.Consumer<Session> remover,
            Sandbox sandbox, SessionStore store) {
        this.session = session;
        this.runner = runner;
        this.creator = creator;
        this.remover = remover;
        this.sandbox = sandbox;
        this.store = store;
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
            String keeps = session.state == Session.State.PAUSED ? kept() : runner.pause(session, true);
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

    /**
     * Forks the session into {@code count} new ones (see the class comment); none is made unless all are.
     *
     * @throws RequestException {@code invalid_request} for a count outside 1..{@link #MAX_FORKS}; as a create does
     *     ({@code too_many_sessions}, {@code data_dir_full}); {@code session_busy} as {@link #pause()}
     */
    public ForkResult fork(int count) throws InterruptedException {
        if (count < 1 || count > MAX_FORKS) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "count must be between 1 and " + MAX_FORKS);
        }
        long start = System.nanoTime();
        lock();
        List<Session> made = new ArrayList<>();
        try {
            String keeps = session.state == Session.State.PAUSED ? kept() : runner.pause(session, true);
            SessionStore.Stored p = session.stored;
            List<String> egress = p.egress();
            for (int i = 0; i < count; i++) {
                Session fork = creator.create(new SessionManager.CreateRequest(p.language(), p.limits(),
                        p.idleTimeoutS(), p.restore(), p.image() == null ? null : p.image().reference(),
                        egress == null || egress.isEmpty() ? null : NetworkRequest.allow(egress), p.onIdle()));
                made.add(fork);
                fill(fork, keeps.equals("memory"));
            }
            List<SessionInfo> forks = made.stream().map(Session::info).toList();
            made.clear();
            return new ForkResult(p.id(), forks, keeps, since(start));
        } catch (IOException e) {
            throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "cannot copy the session into its fork: "
                    + e.getMessage());
        } finally {
            made.forEach(remover); // a fork left half made is no fork
            session.lock.unlock();
        }
    }

    /** Makes {@code fork} (just created) the parent's copy: stopped, its workspace, cells and memory the parent's. */
    private void fill(Session fork, boolean memory) throws IOException, InterruptedException {
        fork.lock.lock();
        try {
            runner.pause(fork, false); // paused, without an interpreter: it comes up from the copy
            WorkspaceCopy.copy(store.dir(session.stored.id()).resolve("workspace"),
                    store.dir(fork.stored.id()).resolve("workspace"), sandbox.sessionUid(fork.stored.number()));
            for (SessionStore.Cell cell : store.cells(session.stored)) {
                store.appendCell(fork.stored, cell.code(), cell.mode());
            }
            if (memory) {
                SavedMemory.share(runner.memory(session), runner.memory(fork));
            }
        } finally {
            fork.lock.unlock();
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
