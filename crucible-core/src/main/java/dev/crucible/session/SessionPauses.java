package dev.crucible.session;

import dev.crucible.egress.NetworkRequest;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.image.Images;
import dev.crucible.image.build.BuildResult;
import dev.crucible.image.build.WorkspaceCommit;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.snapshot.SnapshotInfo;
import dev.crucible.session.snapshot.SnapshotStore;
import dev.crucible.session.spec.CommitResult;
import dev.crucible.session.spec.ForkResult;
import dev.crucible.session.spec.PauseResult;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.store.SavedMemory;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.DataDirFull;
import dev.crucible.session.workspace.WorkspaceCopy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

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
 *
 * <p>A snapshot is such a copy kept under a name ({@link SnapshotStore}) rather than made a session; a new session is
 * made from it, by any replica sharing the data directory, as a fork is made from its parent, and brought up at once.
 */
public final class SessionPauses {
    /** How long a pause or resume waits for a cell or command of the session to end. */
    static final long BUSY_WAIT_MS = 30_000;

    /** The most forks one call makes. */
    public static final int MAX_FORKS = 16;

    private final Session session;
    private final SessionRunner runner;
    private final Creator creator;
    private final Consumer<Session> remover;
    private final Sandbox sandbox;
    private final SessionStore store;
    private final SnapshotStore snapshots;
    private final LongConsumer admitSnapshot;
    private final Images images;

    /** Makes a new session of the same owner, without an interpreter yet. */
    interface Creator {
        Session create(SessionManager.CreateRequest request) throws InterruptedException;
    }

    /**
     * @param session the session paused, forked or snapshotted (null for {@link #fromSnapshot} only)
     * @param admitSnapshot throws {@code disk_budget_exhausted} when a snapshot of so many bytes does not fit
     */
    SessionPauses(Session session, SessionRunner runner, Creator creator, Consumer<Session> remover,
            Sandbox sandbox, SessionStore store, SnapshotStore snapshots, LongConsumer admitSnapshot,
            Images images) {
        this.images = images;
        this.snapshots = snapshots;
        this.admitSnapshot = admitSnapshot;
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
            String keeps = session.state() == Session.State.PAUSED ? kept() : runner.pause(session, true);
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
            String keeps = session.state() == Session.State.PAUSED ? kept() : runner.pause(session, true);
            SessionStore.Stored p = session.stored;
            List<String> egress = p.egress();
            for (int i = 0; i < count; i++) {
                Session fork = creator.create(new SessionManager.CreateRequest(p.language(), p.limits(),
                        p.idleTimeoutS(), p.restore(), p.image() == null ? null : p.image().reference(),
                        egress == null || egress.isEmpty() ? null : NetworkRequest.allow(egress), p.onIdle(), null,
                        p.isolation()));
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
            WorkspaceCopy.copy(workspaceOf(session), workspaceOf(fork), sandbox.sessionUid(fork.stored.number()));
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

    /**
     * Takes a snapshot of the session named {@code name} (see the class comment). Behind gVisor its sandbox is saved
     * whole, as a pause saves it, and the session is left paused (its next call brings it back from that memory);
     * under the namespace tier it goes on running, and its files are copied as they are (a background process
     * writing meanwhile may leave a file of the copy half-written).
     *
     * @throws RequestException {@code invalid_request} for a bad name, {@code snapshot_exists},
     *     {@code disk_budget_exhausted}, {@code data_dir_full}; {@code session_busy} as {@link #pause()}
     */
    public SnapshotInfo snapshot(String name) throws InterruptedException {
        SnapshotStore.checkName(name);
        long start = System.nanoTime();
        lock();
        SnapshotStore.Pending pending = null;
        try {
            pending = snapshots.begin(session.stored.owner(), name);
            String keeps = session.state() == Session.State.PAUSED ? kept()
                    : session.box != null && session.box.savable() ? runner.pause(session, true)
                    : session.stored.restore().equals("replay") ? "replay" : "files";
            long bytes = WorkspaceCopy.copy(workspaceOf(session), pending.workspace(), -1); // the server's
            snapshots.writeCells(pending, store.cells(session.stored));
            if (keeps.equals("memory")) {
                bytes += SavedMemory.share(runner.memory(session), pending.memory());
            }
            admitSnapshot.accept(bytes);
            SnapshotStore.Record record = snapshots.name(pending, new SnapshotStore.Record(name,
                    session.stored.owner(), session.stored, keeps, bytes, session.clock().millis()));
            pending = null;
            return record.info().took(since(start));
        } catch (IOException e) {
            throw DataDirFull.orElse(e, store.root().getParent(), "the snapshot", new RequestException(
                    ErrorCode.INTERPRETER_UNAVAILABLE, "cannot copy the session into its snapshot: " + e.getMessage()));
        } finally {
            if (pending != null) {
                snapshots.abandon(pending);
            }
            session.lock.unlock();
        }
    }

    /**
     * Makes a new session of the snapshot's owner from {@code record}, and brings it up: its language, restore mode
     * and image are the snapshot's; its limits, idle timeout, {@code on_idle} and network those {@code asked} gives,
     * else the snapshot's (a network is granted within the operator's list as for any new session).
     *
     * @throws RequestException {@code invalid_request} when {@code asked} names another language, image or restore
     *     mode; as a create does; {@code interpreter_unavailable} when it cannot be brought up (nothing is left)
     */
    SessionInfo fromSnapshot(SnapshotStore.Record record, SessionManager.CreateRequest asked)
            throws InterruptedException {
        SessionStore.Stored s = record.session();
        String image = s.image() == null ? null : s.image().digest();
        for (String[] field : new String[][] {{"language", asked.language(), s.language()}, {"image", asked.image(),
                image}, {"restore", asked.restore(), s.restore()}}) {
            if (field[1] != null && !field[1].equals(field[2]) && !(field[0].equals("image") && s.image() != null
                    && field[1].equals(s.image().reference()))) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "snapshot '" + record.name() + "' is of a session"
                        + " with " + field[0] + " " + field[2] + "; leave " + field[0] + " out");
            }
        }
        Session made = creator.create(new SessionManager.CreateRequest(s.language(),
                asked.limits() != null ? asked.limits() : s.limits(),
                asked.idleTimeoutS() != null ? asked.idleTimeoutS() : s.idleTimeoutS(), s.restore(), image,
                asked.network() != null ? asked.network() : s.egress() == null || s.egress().isEmpty() ? null
                        : NetworkRequest.allow(s.egress()), asked.onIdle() != null ? asked.onIdle() : s.onIdle(), null,
                tier(s.isolation(), asked.isolation())));
        boolean up = false;
        made.lock.lock();
        try {
            runner.pause(made, false);
            SnapshotStore.Pending files = snapshots.files(record);
            WorkspaceCopy.copy(files.workspace(), workspaceOf(made), sandbox.sessionUid(made.stored.number()));
            for (SessionStore.Cell cell : snapshots.cells(record)) {
                store.appendCell(made.stored, cell.code(), cell.mode());
            }
            if (record.keeps().equals("memory")) {
                SavedMemory.share(files.memory(), runner.memory(made));
            }
            SessionRunner.Boot boot = runner.boot(made);
            if (boot.failure() != null) {
                throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, boot.failure());
            }
            made.touch();
            up = true;
            return made.info().withRestored(boot.restored() == null ? "files" : boot.restored());
        } catch (IOException e) {
            throw DataDirFull.orElse(e, store.root().getParent(), "the session", new RequestException(
                    ErrorCode.INTERPRETER_UNAVAILABLE, "cannot copy the snapshot into the session: " + e.getMessage()));
        } finally {
            made.lock.unlock();
            if (!up) {
                remover.accept(made);
            }
        }
    }

    /**
     * Commits the session's workspace as a new image {@code tag} over the image the session runs in (see
     * {@link WorkspaceCommit}); the session goes on as it was.
     *
     * @throws RequestException {@code commit_unavailable} for a session on the host's file system (no image to
     *     commit over), {@code invalid_request} for a tag that does not parse or has a digest, {@code image_not_found}
     *     when the session's image left the store; {@code session_busy} as {@link #pause()}
     */
    public CommitResult commit(String tag) throws InterruptedException {
        long start = System.nanoTime();
        lock();
        try {
            SessionStore.Stored s = session.stored;
            if (s.image() == null || images.store() == null) {
                throw new RequestException(ErrorCode.COMMIT_UNAVAILABLE, "session " + s.id() + " runs on the host's"
                        + " file system, which is no image to commit over: make the session in an image (\"image\":"
                        + " REF) to commit it, or make an image with crucible image build");
            }
            Image base = images.store().find(s.image().digest()).orElseThrow(() -> new RequestException(
                    ErrorCode.IMAGE_NOT_FOUND, "the session's image " + s.image().reference() + " ("
                            + s.image().digest() + ") is no longer in the store"));
            if (tag == null || tag.isBlank()) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "a commit needs a tag: name[:tag]");
            }
            BuildResult.Built built = WorkspaceCommit.commit(images.store(), base, workspaceOf(session),
                    ImageRef.parse(tag.strip()), store.dir(s.id()), "session " + s.id());
            images.committed();
            Image image = built.image();
            return new CommitResult(image.name(), image.digest(), image.id(), base.digest(), built.layerBytes(),
                    built.entries(), built.whiteouts(), since(start));
        } catch (ImageException e) {
            throw new RequestException(e.failure() == ImageException.Failure.INVALID_REFERENCE
                    || e.failure() == ImageException.Failure.UNSUPPORTED ? ErrorCode.INVALID_REQUEST
                    : ErrorCode.COMMIT_UNAVAILABLE, e.getMessage());
        } catch (IOException e) {
            throw DataDirFull.orElse(e, store.root().getParent(), "the image", new RequestException(
                    ErrorCode.COMMIT_UNAVAILABLE, "cannot commit the session: " + e.getMessage()));
        } finally {
            session.lock.unlock();
        }
    }

    private Path workspaceOf(Session s) {
        return store.dir(s.stored.id()).resolve("workspace");
    }

    /** Whether the session is paused now. */
    public boolean paused() {
        return session.state() == Session.State.PAUSED;
    }

    /** What a resume of a session paused already brings back. */
    private String kept() {
        return Files.isDirectory(runner.memory(session)) ? "memory"
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

    /**
     * The tier a session made from a snapshot runs behind: the snapshot's session's ({@code kept}), or a stronger one
     * {@code asked} for.
     *
     * @throws RequestException {@code invalid_request} for an unknown tier or one weaker than the snapshot's
     */
    static String tier(String kept, String asked) {
        if (asked == null || kept == null) {
            return asked != null ? asked : kept;
        }
        Isolation wanted;
        try {
            wanted = Isolation.parse(asked);
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
        if (wanted.compareTo(Isolation.parse(kept)) < 0) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "the snapshot is of a session behind " + kept
                    + "; a session made from it may ask for a stronger isolation, never a weaker one (leave it out)");
        }
        return wanted.wire();
    }

    private static long since(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}
