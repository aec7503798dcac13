package dev.crucible.session.store;

import dev.crucible.os.Linux;
import dev.crucible.runtime.RuntimeImage;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.workspace.DiskOwners;
import dev.crucible.session.workspace.Workspace;
import dev.crucible.session.workspace.WorkspaceDisk;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a session keeps on disk, under {@code <data dir>/sessions/<id>/}: {@code session.json} (the record that makes
 * it a session), {@code cells.jsonl} (its successful cells, for replay), {@code interpreter.log} and the workspace
 * (a directory, or a loop-mounted image through {@link WorkspaceDisk}). Removal takes {@code session.json} first, so
 * a removal cut short never brings a session back. Not thread-safe per session: callers hold the session's lock.
 */
public final class SessionStore {
    private static final System.Logger LOG = System.getLogger("crucible.session");
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    /**
     * What a session keeps on disk ({@code session.json}); {@code image} is the image it runs in, pinned to the digest
     * it started on (null on the host's file system, and in records written before images); {@code isolation} the tier
     * it was made behind ({@code namespaces}, {@code gvisor}; null in records written before tiers of sessions), which
     * every sandbox of it keeps: a fork, a resume, a snapshot's copy, a replica that adopts it.
     */
    public record Stored(
            String id, String owner, String language, SessionLimits limits, long idleTimeoutS, long createdAtMs,
            long endOfLifeMs, String restore, int number, RuntimeImage image, List<String> egress, String onIdle,
            String isolation) {
        public Stored withNumber(int n) {
            return new Stored(id, owner, language, limits, idleTimeoutS, createdAtMs, endOfLifeMs, restore, n, image,
                    egress, onIdle, isolation);
        }

        /** Whether, idle past its timeout, it is paused rather than deleted ({@code on_idle: "pause"}). */
        public boolean pausesWhenIdle() {
            return "pause".equals(onIdle);
        }

        /** This session with its egress narrowed to {@code entries} (empty: locked, for good). */
        public Stored withEgress(List<String> entries) {
            return new Stored(id, owner, language, limits, idleTimeoutS, createdAtMs, endOfLifeMs, restore, number,
                    image, entries, onIdle, isolation);
        }
    }

    /** One logged cell. */
    public record Cell(String code, String mode) {}

    private final Path root;
    private final JsonMapper json;
    private final WorkspaceDisk disk;
    private final boolean perSessionUids;
    private volatile IntConsumer made = number -> {};
    private final GrowingWorkspaces numbers = new GrowingWorkspaces();

    /**
     * Opens (creating) {@code <dataDir>/sessions}.
     *
     * @param perSessionUids whether sandboxes bind workspaces as per-session uids (root): then every directory above
     *     the data dir must let others search, or the sandboxes could not reach their workspaces
     * @throws IOException when the directory cannot be made, or the sandboxes could not reach it
     */
    public SessionStore(Path dataDir, boolean perSessionUids, JsonMapper json) throws IOException {
        this.root = dataDir.resolve("sessions");
        this.json = json;
        this.perSessionUids = perSessionUids;
        Files.createDirectories(root);
        if (perSessionUids) {
            for (Path dir : List.of(dataDir, root)) {
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
            }
            for (Path up = dataDir.toAbsolutePath().getParent(); up != null; up = up.getParent()) {
                if (!Files.getPosixFilePermissions(up).contains(PosixFilePermission.OTHERS_EXECUTE)) {
                    throw new IOException("the sandboxes cannot reach " + dataDir + ": " + up + " is not searchable by"
                            + " other users; choose a data directory outside it (e.g. /var/lib/crucible)");
                }
            }
        }
        this.disk = WorkspaceDisk.detectWhenIdle(dataDir, perSessionUids, found -> LOG.log(found.enforced()
                ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING, "sessions: " + found.describe()));
    }

    /** Waits for the disk's probe: it mounts and removes an image of its own under the data directory. */
    public void awaitProbe() {
        disk.enforced();
    }

    public Path root() { return root; }

    public Path dir(String id) {
        return root.resolve(id);
    }

    /** The workspace of {@code stored}, reached as {@code uid} (the session's; -1 when sandboxes run as ours). */
    public Workspace workspace(Stored stored, int uid) {
        return new Workspace(dir(stored.id()).resolve("workspace"), uid);
    }

    /** Admits a grow of session {@code number}'s workspace (see {@link WorkspaceDisk.Growth}). */
    public interface Grows {
        boolean take(int number, long bytes);
        void done(int number, long bytes);
    }

    /** Has {@code made} hear a session's number once its workspace's room is taken, and {@code grows} admit grows. */
    public void onWorkspaceMade(IntConsumer made, Grows grows) {
        this.made = made;
        disk.admitGrowths(numbers.byDirectory(grows));
    }

    /** What each session's workspace holds on the host, by number; null: one that does not grow (its quota whole). */
    public Map<Integer, WorkspaceDisk.Allocation> allocations() {
        return numbers.allocations(disk, this);
    }

    /** Makes a new session's directory, its workspace of {@code quota} bytes and its record. */
    public void create(Stored stored, long quota) throws IOException {
        create(stored, quota, false);
    }

    /** As {@link #create(Stored, long)}; {@code rooted}: with room for a root of its own ({@link #rootOf}) too. */
    public void create(Stored stored, long quota, boolean rooted) throws IOException {
        Path dir = dir(stored.id());
        Files.createDirectory(dir);
        numbers.put(stored.id(), stored.number()); // a fork's copy grows the workspace before the record is written
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        if (rooted) {
            disk.createRooted(dir, quota, () -> made.accept(stored.number()));
            Path mounts = Files.createDirectory(dir.resolve("mnt")); // the launcher's mount points: made at each launch
            Files.setPosixFilePermissions(mounts, PosixFilePermissions.fromString("rwxr-xr-x"));
        } else {
            disk.create(dir, quota, () -> made.accept(stored.number()));
        }
        write(stored);
    }

    /** Whether new sessions can have a root of their own on this disk (loop-mounted images: a bounded disk). */
    public boolean roomForRoots() {
        return disk.enforced();
    }

    /**
     * The session's own root when it was made with one ({@code create(…, true)}): its directories on its disk, its
     * layers ({@link #ROOT_LAYERS}) and the directory of the launcher's mount points; null for a session on the shared
     * read-only root.
     */
    public SandboxRoot.Overlaid rootOf(Stored stored) {
        return OwnRoot.of(dir(stored.id()));
    }

    /**
     * Replaces {@code session.json} atomically: a temp file written and synced, then renamed over it, so a reader, a
     * crash or a full disk sees the old record or the new one, never half of one.
     */
    public void write(Stored stored) throws IOException {
        Path dir = dir(stored.id());
        numbers.put(stored.id(), stored.number());
        Path temp = dir.resolve("session.json.tmp");
        try {
            try (FileChannel out = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer bytes = ByteBuffer.wrap(json.writeValueAsBytes(stored));
                while (bytes.hasRemaining()) {
                    out.write(bytes);
                }
                out.force(true);
            }
            Files.move(temp, dir.resolve("session.json"), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            try {
                Files.deleteIfExists(temp); // a full disk's half: the record stays the last whole one
            } catch (IOException left) {
                e.addSuppressed(left);
            }
            throw e;
        }
    }

    /**
     * Hands every stored session to {@code found}, in no order. With {@code sweep} a directory without a record (a
     * delete or a create cut short) is removed on the way, never a session again; without, it is left alone (replicas
     * that share the data directory: it may be another's session being created). A record that does not load is
     * logged and left.
     */
    public void scan(Consumer<Stored> found, boolean sweep) {
        try (var dirs = Files.list(root)) {
            for (Path dir : dirs.toList()) {
                Path file = dir.resolve("session.json");
                if (!Files.isRegularFile(file, NOFOLLOW)) {
                    if (sweep && Files.isDirectory(dir, NOFOLLOW)) {
                        sweep(dir);
                    }
                    continue;
                }
                try {
                    Stored stored = json.readValue(file.toFile(), Stored.class);
                    if (dir.getFileName().toString().equals(stored.id())) {
                        found.accept(stored);
                    }
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot load the session in " + dir + ": " + e.getMessage());
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list " + root + ": " + e.getMessage());
        }
    }

    /** The stored record of session {@code id} (a well-formed id), or empty when there is none or it does not load. */
    public Optional<Stored> read(String id) {
        Path file = dir(id).resolve("session.json");
        if (!Files.isRegularFile(file, NOFOLLOW)) {
            return Optional.empty();
        }
        try {
            Stored stored = json.readValue(file.toFile(), Stored.class);
            return stored.id().equals(id) ? Optional.of(stored) : Optional.empty();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot load the session in " + dir(id) + ": " + e.getMessage());
            return Optional.empty();
        }
    }

    /** Mounts a kept session's workspace image again (a clean stop unmounted it; after a kill -9 it still is). */
    public void attach(Stored stored) throws IOException {
        numbers.put(stored.id(), stored.number());
        disk.attach(dir(stored.id()));
    }

    /** Unmounts a session's workspace image; its files stay in the image. */
    public void detach(Stored stored) {
        numbers.remove(stored.id());
        disk.detach(dir(stored.id()));
    }

    /**
     * Gives a kept workspace to {@code uid} when it belongs to another (another uid block than the last run's, or a
     * new number); a session with a root of its own, its whole disk to {@code uid} and the root block from
     * {@code rootUid} ({@link DiskOwners}). Only while no sandbox runs for it.
     */
    public void chownIfMoved(Stored stored, int uid, long rootUid) throws IOException {
        Path workspace = dir(stored.id()).resolve("workspace");
        if (rootUid >= 0 && WorkspaceDisk.rooted(dir(stored.id()))) { // root's files too, each at its own id inside
            DiskOwners.moveIfElsewhere(dir(stored.id()).resolve(WorkspaceDisk.DISK), uid, rootUid);
        } else if (uid >= 0 && Files.isDirectory(workspace, NOFOLLOW)
                && !Integer.valueOf(uid).equals(Files.getAttribute(workspace, "unix:uid", NOFOLLOW))) {
            try (var walk = Files.walk(workspace)) {
                for (Path p : walk.toList()) {
                    Files.setAttribute(p, "unix:uid", uid, NOFOLLOW);
                    Files.setAttribute(p, "unix:gid", uid, NOFOLLOW);
                }
            }
        }
    }

    /** An empty interpreter log for a new interpreter. */
    public Path freshInterpreterLog(Stored stored) throws IOException {
        Path log = dir(stored.id()).resolve("interpreter.log");
        Files.write(log, new byte[0]);
        return log;
    }

    private Path cellLog(Stored stored) {
        return dir(stored.id()).resolve("cells.jsonl");
    }

    private byte[] cellLine(String code, String mode) {
        return (json.writeValueAsString(Map.of("code", code, "mode", mode)) + "\n").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Grows the session's workspace, if it grows, to a step of free room before the session runs something (a cell:
     * {@code SessionRunner}); a writer faster than the growth's looks meets {@code ENOSPC} only past that step.
     */
    public void readyToWrite(Stored stored) {
        disk.readyToWrite(dir(stored.id()));
    }

    /**
     * Makes room in the cell log for this cell's line before it runs (blocks given to the file past its end), so that
     * logging it after it ran cannot find the disk full: a cell is refused unrun rather than run and then lost from the
     * replay. On a file system without {@code fallocate} the line is left to chance, as before.
     *
     * @throws IOException when the file system has no room for the line (see
     *     {@link dev.crucible.session.workspace.DataDirFull})
     */
    public void reserveCell(Stored stored, String code, String mode) throws IOException {
        Path log = cellLog(stored);
        if (!Files.exists(log, NOFOLLOW)) {
            Files.createFile(log); // an inode, no block
        }
        try {
            Linux.fallocate(log, Linux.FALLOC_FL_KEEP_SIZE, Files.size(log), cellLine(code, mode).length);
        } catch (Linux.ErrnoException e) {
            if (e.errno() != Linux.EOPNOTSUPP) {
                throw e;
            }
        }
    }

    /**
     * Logs a successful cell for replay; a failure to log is only logged (the cell did run). A line the disk cut short
     * is taken back, so the next cell's line does not continue it.
     */
    public void appendCell(Stored stored, String code, String mode) {
        try {
            CellLog.append(cellLog(stored), cellLine(code, mode));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot log a cell of session " + stored.id() + ": " + e.getMessage());
        }
    }

    /** Forgets the logged cells (a fresh interpreter: their variables are gone). */
    public void clearCells(Stored stored) {
        try {
            Files.deleteIfExists(cellLog(stored));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot clear the cell log of " + stored.id(), e);
        }
    }

    /** The logged cells in order; a line cut by a kill is skipped. */
    public List<Cell> cells(Stored stored) {
        return CellLog.read(cellLog(stored), json);
    }

    /**
     * Removes a session's directory: the record first, then the workspace through {@code workspace} (descriptors,
     * never a path its sandbox could change, whatever modes the sandbox left in it), then the rest.
     */
    public void remove(Stored stored, Workspace workspace) {
        Path dir = dir(stored.id());
        numbers.remove(stored.id());
        try {
            Files.deleteIfExists(dir.resolve("session.json"));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove " + dir.resolve("session.json") + ": " + e.getMessage());
        }
        removeLeftovers(dir, workspace);
    }

    /** What a delete cut short left: removed as the owner of its workspace (no sandbox runs for it). */
    private void sweep(Path dir) {
        int owner = -1;
        try {
            Path workspace = dir.resolve("workspace");
            if (perSessionUids && Files.isDirectory(workspace, NOFOLLOW)) {
                owner = (Integer) Files.getAttribute(workspace, "unix:uid", NOFOLLOW);
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot read the owner of " + dir, e);
        }
        removeLeftovers(dir, new Workspace(dir.resolve("workspace"), owner));
    }

    /** Removes a directory that is no session (any more): its workspace through {@code workspace}, then the rest. */
    private void removeLeftovers(Path dir, Workspace workspace) {
        disk.detach(dir); // an image's files go with the image; its mount point was always empty
        try {
            if (Files.isDirectory(dir.resolve("workspace"), NOFOLLOW)
                    && !Files.exists(dir.resolve(WorkspaceDisk.IMAGE), NOFOLLOW)) {
                workspace.clear();
            }
            Files.deleteIfExists(dir.resolve("workspace"));
            // a session with a root of its own: the image's mount point and the launcher's (all empty when unmounted)
            OwnRoot.removeMountPoints(dir);
            for (String name : List.of("mnt", WorkspaceDisk.DISK)) {
                Files.deleteIfExists(dir.resolve(name));
            }
            for (String name : List.of("session.json.tmp", "cells.jsonl", "interpreter.log", WorkspaceDisk.IMAGE,
                    SessionLease.FILE, SessionLease.FILE + ".name", SessionLease.FILE + ".tmp")) { // a replica's lease too
                Files.deleteIfExists(dir.resolve(name));
            }
            Files.deleteIfExists(dir);
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove all of " + dir + " (it is no session; the next start"
                    + " tries again): " + e.getMessage());
        }
    }
}
