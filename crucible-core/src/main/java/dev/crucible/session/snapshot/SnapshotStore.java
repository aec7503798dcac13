package dev.crucible.session.snapshot;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.store.SessionStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import tools.jackson.databind.json.JsonMapper;

/**
 * The snapshots kept under {@code <data dir>/snapshots/}, a directory the server's alone (mode 0700): one directory
 * per snapshot, named by a hash of its owner and name (so a name is never a path, and one owner's names never meet
 * another's), holding {@code snapshot.json} (its {@link Record}), {@code workspace/} (the server's copy of the
 * session's files), {@code cells.jsonl} and, behind gVisor, {@code memory/} (its saved sandbox, as
 * {@code SavedMemory} keeps one). A snapshot is written whole in a directory of its own ({@code .new-*}) and then
 * renamed into place once flushed to the disk, so a crash leaves no half snapshot under a name, and two replicas taking the same name cannot
 * both succeed. Any replica sharing the data directory sees them all. Thread-safe.
 */
public final class SnapshotStore {
    private static final System.Logger LOG = System.getLogger("crucible.session");
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    /** A snapshot's name: what a user may type, never a path. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final String PENDING = ".new-";
    private static final String GOING = ".gone-";
    /** A pending snapshot this old was left by a crash (a replica writing one takes seconds, not hours). */
    private static final long STALE_MS = 6 * 3600_000L;

    /**
     * What {@code snapshot.json} holds.
     *
     * @param session the session's record when it was taken (its language, limits, restore mode, image, egress)
     * @param keeps {@code memory}, {@code replay} or {@code files}
     */
    public record Record(String name, String owner, SessionStore.Stored session, String keeps, long bytes,
            long createdAtMs) {
        public SnapshotInfo info() {
            return new SnapshotInfo(name, session.id(), session.language(),
                    session.image() == null ? null : session.image().reference(), keeps, bytes,
                    Instant.ofEpochMilli(createdAtMs).toString(), null);
        }
    }

    /** A snapshot being written, not yet under its name. */
    public record Pending(Path dir) {
        public Path workspace() {
            return dir.resolve("workspace");
        }

        public Path cells() {
            return dir.resolve("cells.jsonl");
        }

        public Path memory() {
            return dir.resolve("memory");
        }
    }

    private final Path root;
    private final JsonMapper json;
    private long total;
    private long totalAt = Long.MIN_VALUE;

    /** Opens (creating) {@code <dataDir>/snapshots}, removing what crashed writes and deletes left. */
    public SnapshotStore(Path dataDir, JsonMapper json) throws IOException {
        this.root = dataDir.resolve("snapshots");
        this.json = json;
        Files.createDirectories(root);
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
        try (var dirs = Files.list(root)) {
            long now = System.currentTimeMillis();
            for (Path dir : dirs.toList()) {
                String name = dir.getFileName().toString();
                if (name.startsWith(GOING) || name.startsWith(PENDING)
                        && now - Files.getLastModifiedTime(dir, NOFOLLOW).toMillis() > STALE_MS) {
                    deleteTree(dir);
                }
            }
        }
    }

    /**
     * Checks a snapshot name.
     *
     * @throws RequestException {@code invalid_request} for a name outside {@code [A-Za-z0-9][A-Za-z0-9._-]{0,63}}
     */
    public static String checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a snapshot needs a name of 1 to 64 letters, digits,"
                    + " '.', '_' or '-' (not first), got " + (name == null ? "none" : "'" + name + "'"));
        }
        return name;
    }

    /** The owner's snapshot {@code name}, or empty. */
    public Optional<Record> find(String owner, String name) {
        return NAME.matcher(name).matches() ? read(dirOf(owner, name)).filter(r -> r.owner().equals(owner)
                && r.name().equals(name)) : Optional.empty();
    }

    /** @throws RequestException {@code snapshot_not_found} unless the owner has snapshot {@code name} */
    public Record require(String owner, String name) {
        return find(owner, checkName(name)).orElseThrow(() -> new RequestException(ErrorCode.SNAPSHOT_NOT_FOUND,
                "no snapshot '" + name + "'; GET /v1/snapshots lists this token's"));
    }

    /** Where the files of {@code record} are. */
    public Pending files(Record record) {
        return new Pending(dirOf(record.owner(), record.name()));
    }

    /** The owner's snapshots, oldest first. */
    public List<Record> list(String owner) {
        return all().stream().filter(r -> r.owner().equals(owner)).toList();
    }

    /**
     * What all snapshots hold on disk, every owner's (the sessions' disk budget counts it at every session create):
     * read again only when the snapshots directory changed (a snapshot named or deleted, by any replica, renames an
     * entry in or out of it), else the last count.
     */
    public synchronized long totalBytes() {
        long changed;
        try {
            changed = Files.getLastModifiedTime(root, NOFOLLOW).to(TimeUnit.NANOSECONDS);
        } catch (IOException e) {
            changed = Long.MIN_VALUE; // read it
        }
        if (changed != totalAt || changed == Long.MIN_VALUE) {
            total = all().stream().mapToLong(Record::bytes).sum();
            totalAt = changed;
        }
        return total;
    }

    private List<Record> all() {
        List<Record> records = new ArrayList<>();
        try (var dirs = Files.list(root)) {
            for (Path dir : dirs.toList()) {
                if (!dir.getFileName().toString().startsWith(".")) {
                    read(dir).ifPresent(records::add);
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot list " + root + ": " + e.getMessage());
        }
        records.sort(Comparator.comparingLong(Record::createdAtMs));
        return records;
    }

    /**
     * Starts writing a snapshot of {@code owner}'s.
     *
     * @throws RequestException {@code snapshot_exists} when the owner has one of that name (checked again when it is
     *     named, see {@link #name})
     */
    public Pending begin(String owner, String name) throws IOException {
        if (find(owner, checkName(name)).isPresent()) {
            throw exists(name);
        }
        Path dir = Files.createTempDirectory(root, PENDING, PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Files.createDirectory(dir.resolve("workspace"));
        return new Pending(dir);
    }

    /**
     * Writes {@code record} into {@code pending} and gives the snapshot its name.
     *
     * @throws RequestException {@code snapshot_exists} when another took the name meanwhile; the pending one is removed
     */
    public Record name(Pending pending, Record record) throws IOException {
        sync(pending.dir()); // a crash never leaves a named snapshot whose files are holes
        Path file = pending.dir().resolve("snapshot.json");
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer bytes = ByteBuffer.wrap(json.writeValueAsBytes(record));
            while (bytes.hasRemaining()) {
                out.write(bytes);
            }
            out.force(true);
        }
        Files.setLastModifiedTime(pending.dir(), FileTime.fromMillis(System.currentTimeMillis()));
        try {
            Files.move(pending.dir(), dirOf(record.owner(), record.name()), StandardCopyOption.ATOMIC_MOVE);
        } catch (FileAlreadyExistsException e) {
            abandon(pending);
            throw exists(record.name());
        } catch (FileSystemException e) { // rename(2) over a directory that is not empty: ENOTEMPTY
            if (Files.exists(dirOf(record.owner(), record.name()), NOFOLLOW)) {
                abandon(pending);
                throw exists(record.name());
            }
            throw e;
        }
        return record;
    }

    /** Writes the logged cells a session made from the snapshot replays. */
    public void writeCells(Pending pending, List<SessionStore.Cell> cells) throws IOException {
        StringBuilder lines = new StringBuilder();
        for (SessionStore.Cell cell : cells) {
            lines.append(json.writeValueAsString(cell)).append('\n');
        }
        Files.writeString(pending.cells(), lines);
    }

    /** The logged cells of a snapshot, in order. */
    public List<SessionStore.Cell> cells(Record record) throws IOException {
        Path file = files(record).cells();
        List<SessionStore.Cell> cells = new ArrayList<>();
        if (Files.isRegularFile(file, NOFOLLOW)) {
            for (String line : Files.readAllLines(file)) {
                cells.add(json.readValue(line, SessionStore.Cell.class));
            }
        }
        return cells;
    }

    /** Flushes the files and directories under {@code dir} (the server's own: no link is followed) to the disk. */
    private static void sync(Path dir) throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.toList()) {
                if (Files.isRegularFile(p, NOFOLLOW) || Files.isDirectory(p, NOFOLLOW)) {
                    try (FileChannel channel = FileChannel.open(p, StandardOpenOption.READ)) {
                        channel.force(true);
                    }
                }
            }
        }
    }

    /** Removes a snapshot that was never named. */
    public void abandon(Pending pending) {
        deleteTree(pending.dir());
    }

    /**
     * Deletes the owner's snapshot {@code name}: renamed aside first (a delete cut short never leaves it listed),
     * then removed.
     *
     * @throws RequestException {@code snapshot_not_found}
     */
    public void delete(String owner, String name) throws IOException {
        Record record = require(owner, name);
        Path going = Files.createTempDirectory(root, GOING);
        Files.move(dirOf(record.owner(), record.name()), going.resolve("s"), StandardCopyOption.ATOMIC_MOVE);
        deleteTree(going);
    }

    private Optional<Record> read(Path dir) {
        Path file = dir.resolve("snapshot.json");
        if (!Files.isRegularFile(file, NOFOLLOW)) {
            return Optional.empty();
        }
        try {
            Record record = json.readValue(file.toFile(), Record.class);
            return dir.equals(dirOf(record.owner(), record.name())) ? Optional.of(record) : Optional.empty();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot load the snapshot in " + dir + ": " + e.getMessage());
            return Optional.empty();
        }
    }

    private Path dirOf(String owner, String name) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest((owner + "\0" + name)
                    .getBytes(StandardCharsets.UTF_8));
            return root.resolve(HexFormat.of().formatHex(hash, 0, 20));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static RequestException exists(String name) {
        return new RequestException(ErrorCode.SNAPSHOT_EXISTS, "this token has a snapshot named '" + name + "' already;"
                + " delete it (DELETE /v1/snapshots/" + name + ") or choose another name");
    }

    /** Removes a tree of the server's own files, never following a link. */
    private static void deleteTree(Path dir) {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | UncheckedIOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove all of " + dir + ": " + e.getMessage());
        }
    }
}
