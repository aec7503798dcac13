package dev.crucible.image.layer;

import dev.crucible.image.spec.ImageException;
import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import dev.crucible.os.Linux.Stat;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The changes an image build's steps made to its private copy of a root, written as one layer ({@link LayerTar}).
 * A name is in the layer when the copy has it and the original has not, or has it otherwise: another type, other
 * permission bits, or for a regular file another size or modification time, for a symlink another target (the test of
 * Docker's own copy-based vfs driver). A directory is written when it is new or its type or mode changed, and as the
 * parent of any change (parents before children). A name the copy lost becomes a whiteout ({@code .wh.NAME}); a
 * directory the steps replaced wholesale is whiteouts of what it lost plus what it has now.
 *
 * <p>The copy was shaped by the steps, so it is read as hostile input: each directory is opened below its top with
 * {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)}, each name looked at with {@code lstat} on its parent's
 * descriptor, a symlink read with {@code readlinkat}, and only a regular file is opened ({@code O_NOFOLLOW |
 * O_NONBLOCK}). FIFOs, sockets and devices are left out, as the unpacker would skip them (one that replaced a file
 * of the original whites it out); a name the layer format cannot carry ({@code .wh.} at its start) refuses the build;
 * what a sandbox mounts over ({@link LayerUnpacker#SANDBOX_MOUNTS}) is never compared. Not thread-safe.
 */
public final class RootDiff {
    private static final int AT_FDCWD = -100;
    private static final int DIR_FLAGS = Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_NOFOLLOW | Linux.O_CLOEXEC;
    private static final int READ_FLAGS = Linux.O_RDONLY | Linux.O_NOFOLLOW | Linux.O_NONBLOCK | Linux.O_CLOEXEC;

    /** The layer written: its diff_id, how many entries (whiteouts included), whiteouts, and specials left out. */
    public record Layer(String diffId, long entries, long whiteouts, long skipped) {}

    /** A directory of the copy: whether the original has a directory there too, and whether the layer has it yet. */
    private static final class Node {
        final String path;
        final Node parent;
        final Stat stat;
        final boolean inOriginal;
        boolean written;

        Node(String path, Node parent, Stat stat, boolean inOriginal) {
            this.path = path;
            this.parent = parent;
            this.stat = stat;
            this.inOriginal = inOriginal;
        }
    }

    private final int originalTop;
    private final int changedTop;
    private final LayerTar tar;
    /** What every entry's name starts with: {@code ""} for a root, {@code "workspace/"} for a workspace. */
    private final String prefix;
    private long whiteouts;
    private long skipped;

    private RootDiff(int originalTop, int changedTop, LayerTar tar, String prefix) {
        this.prefix = prefix;
        this.originalTop = originalTop;
        this.changedTop = changedTop;
        this.tar = tar;
    }

    /**
     * Writes to {@code layerFile} (which must not exist) the layer that turns {@code original} into {@code changed}.
     *
     * @throws ImageException UNSUPPORTED for a name the layer format cannot carry
     */
    public static Layer write(Path original, Path changed, Path layerFile) throws IOException {
        return write(original, changed, "", layerFile);
    }

    /**
     * As {@link #write(Path, Path, Path)} for one directory of a root: {@code original} is the directory {@code under}
     * (a relative path, such as {@code workspace}) of an image's root, {@code changed} what it is to become; the
     * layer's entries are named below {@code under}. So a session's workspace becomes a layer over its image.
     */
    public static Layer writeUnder(Path original, Path changed, String under, Path layerFile) throws IOException {
        if (under.isEmpty() || under.startsWith("/") || under.endsWith("/") || under.contains("..")) {
            throw new IllegalArgumentException("a relative directory without '..': " + under);
        }
        return write(original, changed, under + "/", layerFile);
    }

    private static Layer write(Path original, Path changed, String prefix, Path layerFile) throws IOException {
        int originalTop = openTop(original);
        try (LayerTar tar = new LayerTar(layerFile)) {
            int changedTop = openTop(changed);
            try {
                RootDiff diff = new RootDiff(originalTop, changedTop, tar, prefix);
                diff.walk();
                return new Layer(tar.finish(), tar.entries(), diff.whiteouts, diff.skipped);
            } finally {
                Linux.close(changedTop);
            }
        } finally {
            Linux.close(originalTop);
        }
    }

    private static int openTop(Path dir) throws IOException {
        return Linux.openat2(AT_FDCWD, dir.toAbsolutePath().toString(), DIR_FLAGS, 0,
                Linux.RESOLVE_NO_SYMLINKS | Linux.RESOLVE_NO_MAGICLINKS);
    }

    /** Depth first with a stack of its own (a deep tree must not overflow the thread's), one directory at a time. */
    private void walk() throws IOException {
        Node top = new Node("", null, null, true);
        top.written = true; // the root itself is never an entry: the unpacker gives it 0755
        Deque<Node> pending = new ArrayDeque<>(List.of(top));
        while (!pending.isEmpty()) {
            Node dir = pending.pop();
            List<Node> subdirectories = compare(dir);
            for (int i = subdirectories.size() - 1; i >= 0; i--) {
                pending.push(subdirectories.get(i)); // popped in name order
            }
        }
    }

    /** Writes what changed in the directory {@code dir}; returns the copy's subdirectories in it, in name order. */
    private List<Node> compare(Node dir) throws IOException {
        int changedFd = open(changedTop, dir.path);
        int originalFd = dir.inOriginal ? open(originalTop, dir.path) : -1;
        try {
            Set<String> inCopy = new TreeSet<>(Linux.listNames(changedFd));
            Set<String> names = new TreeSet<>(inCopy);
            if (originalFd >= 0) {
                names.addAll(Linux.listNames(originalFd));
            }
            List<Node> subdirectories = new ArrayList<>();
            for (String name : names) {
                String path = dir.path.isEmpty() ? name : dir.path + "/" + name;
                if (!LayerUnpacker.SANDBOX_MOUNTS.contains(prefix + path)) {
                    Stat now = inCopy.contains(name) ? stat(changedFd, name, true) : null;
                    Stat before = originalFd >= 0 ? stat(originalFd, name, false) : null;
                    Node subdirectory = compare(dir, changedFd, originalFd, name, path, now, before);
                    if (subdirectory != null) {
                        subdirectories.add(subdirectory);
                    }
                }
            }
            return subdirectories;
        } finally {
            Linux.close(changedFd);
            if (originalFd >= 0) {
                Linux.close(originalFd);
            }
        }
    }

    /** Writes {@code name}'s change, if any; returns its node when the copy has a directory there. */
    private Node compare(Node dir, int changedFd, int originalFd, String name, String path, Stat now, Stat before)
            throws IOException {
        int type = now == null ? 0 : now.mode() & Linux.S_IFMT;
        if (now != null && type != Linux.S_IFDIR && type != Linux.S_IFREG && type != Linux.S_IFLNK) {
            skipped++; // a FIFO, socket or device: no layer carries one into a root
            now = null;
        }
        if (now == null) {
            if (before != null) {
                writeParents(dir);
                tar.whiteout(prefix + path);
                whiteouts++;
            }
            return null;
        }
        if (name.startsWith(TarLayer.WHITEOUT)) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, "a step made /" + path + ": a name that"
                    + " starts with " + TarLayer.WHITEOUT + " means a deletion in an image layer, so it cannot be"
                    + " stored; rename it");
        }
        boolean sameType = before != null && (before.mode() & Linux.S_IFMT) == type;
        boolean sameMode = sameType && permissions(before) == permissions(now);
        if (type == Linux.S_IFDIR) {
            Node node = new Node(path, dir, now, sameType);
            if (!sameMode) {
                writeParents(node);
            }
            return node;
        }
        if (type == Linux.S_IFREG) {
            if (!sameMode || before.size() != now.size() || before.mtimeSeconds() != now.mtimeSeconds()
                    || before.mtimeNanos() != now.mtimeNanos()) {
                writeParents(dir);
                writeFile(changedFd, name, path, now);
            }
            return null;
        }
        String target = Linux.readlinkat(changedFd, name);
        if (!sameType || !target.equals(Linux.readlinkat(originalFd, name))) {
            writeParents(dir);
            tar.symlink(prefix + path, target, now.mtimeSeconds());
        }
        return null;
    }

    /** Writes {@code node} and every ancestor the layer does not have yet, outermost first. */
    private void writeParents(Node node) throws IOException {
        Deque<Node> missing = new ArrayDeque<>();
        for (Node n = node; !n.written; n = n.parent) {
            missing.push(n);
        }
        for (Node n : missing) {
            tar.directory(prefix + n.path, permissions(n.stat), n.stat.mtimeSeconds());
            n.written = true;
        }
    }

    private void writeFile(int dirFd, String name, String path, Stat stat) throws IOException {
        int fd = Linux.openat2(dirFd, name, READ_FLAGS, 0, Linux.RESOLVE_STRICT);
        try (InputStream in = Files.newInputStream(Path.of("/proc/self/fd/" + fd))) {
            tar.file(prefix + path, permissions(stat), stat.mtimeSeconds(), stat.size(), in);
        } finally {
            Linux.close(fd);
        }
    }

    private static int permissions(Stat stat) {
        return stat.mode() & 07777;
    }

    private static int open(int top, String path) throws ErrnoException {
        return Linux.openat2(top, path.isEmpty() ? "." : path, DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
    }

    /**
     * {@code name}'s lstat, or null when it is missing. A name the copy listed must be there: one that is not could
     * not be looked up by its name as read (not UTF-8), and leaving it out would lose it silently.
     */
    private static Stat stat(int dirFd, String name, boolean listed) throws IOException {
        try {
            return Linux.lstat(dirFd, name);
        } catch (ErrnoException e) {
            if (e.errno() != Linux.ENOENT) {
                throw e;
            }
            if (listed) {
                throw new ImageException(ImageException.Failure.UNSUPPORTED, "a step made a file whose name is not"
                        + " UTF-8 ('" + name + "'); image layers name files in UTF-8: rename it");
            }
            return null;
        }
    }
}
