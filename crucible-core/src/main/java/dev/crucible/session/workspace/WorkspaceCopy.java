package dev.crucible.session.workspace;

import static dev.crucible.os.Linux.O_CLOEXEC;
import static dev.crucible.os.Linux.O_DIRECTORY;
import static dev.crucible.os.Linux.O_NOFOLLOW;
import static dev.crucible.os.Linux.O_PATH;
import static dev.crucible.os.Linux.RESOLVE_STRICT;

import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * A copy of a session's workspace (issue 30: a fork's, a snapshot's, a session made from a snapshot): directories,
 * regular files and symbolic links (as links, never followed: they resolve inside the copy's sandbox as they did in
 * the original's), each owned by the copy's uid; anything else (a FIFO, a socket, a device node) is left out, and so is
 * the file system's own {@code lost+found}.
 *
 * <p>The source may be a live session's (a snapshot under the namespace tier does not stop it), so it is read as
 * hostile input, the way {@link Workspace} reads it: each directory is opened by descriptor below its parent's
 * ({@code openat2} with {@code RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS}), each name looked at with {@code lstat} there,
 * each file opened as {@code O_PATH} first and read only once that descriptor is a regular file. A name swapped for a
 * link or a FIFO meanwhile is left out, never followed, never blocks; a file written meanwhile is copied as it is
 * at that moment.
 */
public final class WorkspaceCopy {
    private static final int AT_FDCWD = -100;
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private WorkspaceCopy() {}

    /**
     * Copies the tree under {@code from} into {@code to} (an existing, empty directory), each entry owned by
     * {@code uid} (-1: left as the copy made it, the server's). Returns how many bytes of files it copied.
     *
     * @throws IOException when a copy fails (the target's disk full, say); what was copied stays for the caller to
     *     remove
     */
    public static long copy(Path from, Path to, int uid) throws IOException {
        int top = Linux.openat2(AT_FDCWD, from.toString(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
        try {
            long bytes = copyDir(top, to, uid, 0);
            own(fd(top), to, uid);
            return bytes;
        } finally {
            Linux.close(top);
        }
    }

    private static long copyDir(int dirFd, Path to, int uid, int depth) throws IOException {
        long bytes = 0;
        for (String name : PathWalk.names(dirFd)) {
            if (depth == 0 && name.equals("lost+found")) {
                continue;
            }
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(fd(dirFd).resolve(name), BasicFileAttributes.class, NOFOLLOW);
            } catch (IOException gone) {
                continue; // removed while we copied
            }
            Path target = to.resolve(name);
            if (a.isSymbolicLink()) {
                try {
                    Files.createSymbolicLink(target, Path.of(Linux.readlinkat(dirFd, name)));
                } catch (ErrnoException gone) {
                    continue;
                }
                own(null, target, uid);
            } else if (a.isDirectory() || a.isRegularFile()) {
                if (a.isDirectory() && depth >= PathWalk.MAX_DEPTH) {
                    throw new IOException("directories nested deeper than " + PathWalk.MAX_DEPTH);
                }
                int fd;
                try {
                    fd = Linux.openat2(dirFd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (a.isDirectory() ? O_DIRECTORY
                            : 0), 0, RESOLVE_STRICT);
                } catch (ErrnoException swapped) {
                    continue; // a link, or gone, now
                }
                try {
                    bytes += a.isDirectory() ? directory(fd, target, uid, depth) : file(fd, target);
                    own(fd(fd), target, uid);
                } finally {
                    Linux.close(fd);
                }
            }
        }
        return bytes;
    }

    private static long directory(int fd, Path target, int uid, int depth) throws IOException {
        Files.createDirectory(target);
        return copyDir(fd, target, uid, depth + 1);
    }

    /** Copies the file {@code fd} holds (an {@code O_PATH} descriptor) when it is a regular file. */
    private static long file(int fd, Path target) throws IOException {
        Path opened = fd(fd); // the pinned inode: what it is now cannot change
        if (!Files.isRegularFile(opened)) {
            return 0;
        }
        try (FileChannel in = FileChannel.open(opened, StandardOpenOption.READ);
                FileChannel out = FileChannel.open(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long size = in.size();
            WorkspaceGrowth.roomFor(target, size); // a workspace that grows: its room before the bytes come
            long done = 0;
            while (done < size) {
                long n = in.transferTo(done, size - done, out);
                if (n <= 0) {
                    break; // it shrank meanwhile
                }
                done += n;
            }
            Files.setLastModifiedTime(target, Files.getLastModifiedTime(opened));
            return done;
        }
    }

    /** Gives {@code target} the permission bits of {@code source} (none for a link) and {@code uid}. */
    private static void own(Path source, Path target, int uid) throws IOException {
        if (source != null) {
            Files.setPosixFilePermissions(target, Files.getPosixFilePermissions(source));
        }
        if (uid >= 0) {
            Files.setAttribute(target, "unix:uid", uid, NOFOLLOW);
            Files.setAttribute(target, "unix:gid", uid, NOFOLLOW);
        }
    }

    private static Path fd(int fd) {
        return Path.of("/proc/self/fd/" + fd);
    }
}
