package dev.crucible.image.store;

import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The file operations of the store: directories of a fixed mode, atomic writes, trees removed without following links.
 * Only {@link #deleteTree} is for others: a tree the store handed out (an image build's copy) is removed with it.
 */
public final class StoreFiles {
    static final Set<PosixFilePermission> DIR_OPEN = PosixFilePermissions.fromString("rwxr-xr-x");
    static final Set<PosixFilePermission> DIR_PRIVATE = PosixFilePermissions.fromString("rwx------");
    /** Others may pass through, never list: a build's sandbox (another uid) reaches its root by a random name. */
    static final Set<PosixFilePermission> DIR_SEARCHABLE = PosixFilePermissions.fromString("rwx--x--x");
    static final Set<PosixFilePermission> FILE_READABLE = PosixFilePermissions.fromString("rw-r--r--");
    private static final int AT_FDCWD = -100;
    private static final int DIR_FLAGS = Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_NOFOLLOW | Linux.O_CLOEXEC;

    private StoreFiles() {}

    /** Creates {@code dir} if missing and gives it {@code mode} whatever the umask (an existing one is set too). */
    static Path directory(Path dir, Set<PosixFilePermission> mode) throws IOException {
        Files.createDirectories(dir);
        if (!Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS).equals(mode)) {
            Files.setPosixFilePermissions(dir, mode);
        }
        return dir;
    }

    /** Writes {@code bytes} to {@code file} through a temp file, fsync and rename: readers see the old or the new. */
    static void writeAtomically(Path file, byte[] bytes) throws IOException {
        Path temp = file.resolveSibling("." + file.getFileName() + "." + UUID.randomUUID() + ".tmp");
        try {
            try (FileChannel out = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                while (buffer.hasRemaining()) {
                    out.write(buffer);
                }
                out.force(true);
            }
            Files.setPosixFilePermissions(temp, FILE_READABLE);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(temp);
        }
        syncDirectory(file.getParent());
    }

    /**
     * Makes {@code to} (which must not exist) a copy of the root {@code from} whose regular files are hard links to
     * {@code from}'s (a root is never written in place, so they may be shared), symlinks copied as links, directories
     * made anew with {@code from}'s modes and times; anything else left out (no root holds any).
     */
    static void linkTree(Path from, Path to) throws IOException {
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir,
                    BasicFileAttributes attrs) throws IOException {
                Files.createDirectory(to.resolve(from.relativize(dir)));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                    throws IOException {
                Path target = to.resolve(from.relativize(file));
                if (attrs.isSymbolicLink()) {
                    Files.createSymbolicLink(target, Files.readSymbolicLink(file));
                } else if (attrs.isRegularFile()) {
                    Files.createLink(target, file);
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                if (e != null) {
                    throw e;
                }
                Path target = to.resolve(from.relativize(dir));
                Files.setPosixFilePermissions(target, Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS));
                Files.setLastModifiedTime(target, Files.getLastModifiedTime(dir, LinkOption.NOFOLLOW_LINKS));
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** Flushes a directory's entries (a rename into it) to disk. */
    static void syncDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    /**
     * Deletes a tree without following symbolic links (a link is removed, never its target). Returns the bytes of the
     * regular files it removed; a missing tree is 0.
     *
     * <p>The tree may be an image root, shaped by hostile layers: directories a layer made 0000 or 0300 (unreadable
     * to a server that is not root until it gives them back their rights, which it does before it opens them, never
     * after) and paths below the root up to the kernel's PATH_MAX, so that their absolute paths are longer than any
     * path a system call takes. So every directory is reached through descriptors: by its path below the tree's top,
     * resolved by {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)}, and emptied with {@code unlinkat}; no
     * descriptor is held while going deeper, so depth costs no descriptors (nor thread stack).
     */
    public static long deleteTree(Path top) throws IOException {
        Path absolute = top.toAbsolutePath();
        Path parent = absolute.getParent();
        if (parent == null) {
            throw new IOException("will not delete the file-system root");
        }
        String name = absolute.getFileName().toString();
        int parentFd;
        try {
            parentFd = Linux.openat2(AT_FDCWD, parent.toString(), DIR_FLAGS, 0, 0);
        } catch (ErrnoException e) {
            if (e.errno() == Linux.ENOENT) {
                return 0;
            }
            throw e;
        }
        try {
            Linux.Stat stat;
            try {
                stat = Linux.lstat(parentFd, name);
            } catch (ErrnoException e) {
                if (e.errno() == Linux.ENOENT) {
                    return 0;
                }
                throw e;
            }
            if ((stat.mode() & Linux.S_IFMT) != Linux.S_IFDIR) {
                unlink(parentFd, name, 0);
                return (stat.mode() & Linux.S_IFMT) == Linux.S_IFREG ? stat.size() : 0;
            }
            int topFd = Linux.openat2(parentFd, name, DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
            long bytes;
            try {
                bytes = empty(topFd, "");
            } finally {
                Linux.close(topFd);
            }
            unlink(parentFd, name, Linux.AT_REMOVEDIR);
            return bytes;
        } finally {
            Linux.close(parentFd);
        }
    }

    /** A directory being emptied: its path below the top and the subdirectories in it still to empty. */
    private record Pending(String path, Iterator<String> subdirectories) {}

    /**
     * Empties the directory {@code path} below {@code topFd} ({@code ""}: the top itself) and removes the directories
     * in it, giving each 0700 before it is read; returns the bytes of the regular files removed. Depth first with a
     * stack of its own (a chain 2000 directories deep would overflow the thread's), holding only the directories on the
     * way down. What another deleter removed meanwhile is skipped.
     */
    private static long empty(int topFd, String path) throws IOException {
        long[] bytes = {0};
        Deque<Pending> stack = new ArrayDeque<>();
        stack.push(new Pending(path, emptyFiles(topFd, path, bytes)));
        while (!stack.isEmpty()) {
            Pending current = stack.peek();
            if (current.subdirectories().hasNext()) {
                String name = current.subdirectories().next();
                String child = current.path().isEmpty() ? name : current.path() + "/" + name;
                stack.push(new Pending(child, emptyFiles(topFd, child, bytes)));
                continue;
            }
            stack.pop();
            if (current.path().isEmpty()) {
                continue; // the top: the caller removes it
            }
            int slash = current.path().lastIndexOf('/');
            int parentFd = openBelow(topFd, slash < 0 ? "" : current.path().substring(0, slash));
            if (parentFd < 0) {
                continue;
            }
            try {
                unlink(parentFd, current.path().substring(slash + 1), Linux.AT_REMOVEDIR);
            } finally {
                Linux.close(parentFd);
            }
        }
        return bytes[0];
    }

    /**
     * Gives the directory {@code path} 0700, removes everything in it but directories (adding the bytes of regular
     * files to {@code bytes[0]}) and returns the names of its subdirectories; none if it is gone.
     */
    private static Iterator<String> emptyFiles(int topFd, String path, long[] bytes) throws IOException {
        int dirFd = openBelow(topFd, path);
        if (dirFd < 0) {
            return Collections.emptyIterator();
        }
        List<String> subdirectories = new ArrayList<>();
        try {
            Linux.fchmodPath(dirFd, 0700);
            for (String child : Linux.listNames(dirFd)) {
                Linux.Stat stat;
                try {
                    stat = Linux.lstat(dirFd, child);
                } catch (ErrnoException e) {
                    if (e.errno() == Linux.ENOENT) {
                        continue;
                    }
                    throw e;
                }
                if ((stat.mode() & Linux.S_IFMT) == Linux.S_IFDIR) {
                    subdirectories.add(child);
                } else {
                    unlink(dirFd, child, 0);
                    bytes[0] += (stat.mode() & Linux.S_IFMT) == Linux.S_IFREG ? stat.size() : 0;
                }
            }
        } finally {
            Linux.close(dirFd);
        }
        return subdirectories.iterator();
    }

    /** The directory {@code path} below {@code topFd}, never through a link; -1 if it is gone. */
    private static int openBelow(int topFd, String path) throws ErrnoException {
        try {
            return Linux.openat2(topFd, path.isEmpty() ? "." : path, DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
        } catch (ErrnoException e) {
            if (e.errno() == Linux.ENOENT) {
                return -1;
            }
            throw e;
        }
    }

    /** {@code unlinkat}; a name already gone is what was wanted. */
    private static void unlink(int dirFd, String name, int flags) throws ErrnoException {
        try {
            Linux.unlinkat(dirFd, name, flags);
        } catch (ErrnoException e) {
            if (e.errno() != Linux.ENOENT) {
                throw e;
            }
        }
    }

    /** {@link #deleteTree} for a clean-up after a failure: a further failure is added to {@code cause}. */
    public static void deleteTreeAfter(Path top, Throwable cause) {
        try {
            deleteTree(top);
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }
}
