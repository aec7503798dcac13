package dev.crucible.session.workspace;

import static dev.crucible.os.Linux.O_CLOEXEC;
import static dev.crucible.os.Linux.O_CREAT;
import static dev.crucible.os.Linux.O_DIRECTORY;
import static dev.crucible.os.Linux.O_EXCL;
import static dev.crucible.os.Linux.O_NOFOLLOW;
import static dev.crucible.os.Linux.O_NONBLOCK;
import static dev.crucible.os.Linux.O_PATH;
import static dev.crucible.os.Linux.O_RDONLY;
import static dev.crucible.os.Linux.O_WRONLY;
import static dev.crucible.os.Linux.RESOLVE_STRICT;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.WorkspacePaths;
import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A session's files (its workspace, or its sandbox's whole root: {@link FileRoot}), reached from the host without ever following a path the sandbox could have planted: every
 * path is resolved by the kernel in one {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS)} relative to the workspace's descriptor, only regular files are read (type checked on the
 * opened descriptor, opened non-blocking so a FIFO cannot hang us), uploads are written to a fresh file created with
 * {@code O_EXCL} and renamed over the target (a planted symlink is replaced, never followed), and when the server is
 * root the path operations run with the session's uid as file-system uid: the kernel checks them as the sandbox's
 * user, and what is created belongs to it.
 */
public final class Workspace {
    private static final int AT_FDCWD = -100;

    private final FileRoot root;
    private final PathWalk walk;

    /**
     * @param root the workspace directory on the host (created by the server, not reachable by any sandbox path)
     * @param uid the session's host uid, or -1 when sandboxes run as the server's own uid
     */
    public Workspace(Path root, int uid) {
        this(new FileRoot.Directory(root), uid);
    }

    /**
     * @param root where paths start and how they resolve there
     * @param uid the host uid the kernel checks path operations as (up to 2^32-2), or -1 for the server's own
     */
    public Workspace(FileRoot root, long uid) {
        this.root = root;
        this.walk = new PathWalk(root, uid);
    }

    /**
     * One entry of a listing. {@code type} is {@code file}, {@code directory}, {@code symlink} or {@code other};
     * {@code mode} the permission bits and file type ({@code st_mode}), {@code uid} its owner on the host, {@code
     * target} a symbolic link's target as written (null for anything else).
     */
    public record Entry(String path, String type, long size, long modifiedMs, int mode, long uid, String target) {
        public Entry(String path, String type, long size, long modifiedMs) {
            this(path, type, size, modifiedMs, 0, -1, null);
        }

        /** The same entry under another path. */
        public Entry at(String shown) {
            return new Entry(shown, type, size, modifiedMs, mode, uid, target);
        }
    }

    /** Writes {@code data} to {@code path}, creating missing directories, replacing what was there atomically. */
    public void write(String path, byte[] data) {
        String[] parts = split(path);
        if (root instanceof FileRoot.Directory(Path dir)) {
            WorkspaceGrowth.roomFor(dir, data.length); // a workspace that grows: its room before the bytes come
        }
        WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            int dir = -1;
            try {
                dir = walk.directory(rootFd, parts, true);
                String temp = ".crucible-upload-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
                int dirFd = dir;
                int fd = walk.asOwner(() -> Linux.openat2(dirFd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0644, RESOLVE_STRICT));
                try {
                    try (OutputStream out = Files.newOutputStream(Path.of("/proc/self/fd/" + fd))) {
                        out.write(data);
                    }
                } catch (IOException e) {
                    walk.asOwner(() -> PathWalk.unlink(dirFd, temp, 0));
                    throw e;
                } finally {
                    Linux.close(fd);
                }
                try {
                    walk.asOwner(() -> {
                        Linux.renameat(dirFd, temp, dirFd, parts[parts.length - 1]);
                        return null;
                    });
                } catch (ErrnoException e) {
                    walk.asOwner(() -> PathWalk.unlink(dirFd, temp, 0));
                    throw e;
                }
                return null;
            } finally {
                PathWalk.closeUnlessRoot(dir, rootFd);
                Linux.close(rootFd);
            }
        }, root.shown(path));
    }

    /** Reads the regular file at {@code path}, refusing one larger than {@code cap} bytes. */
    public byte[] read(String path, long cap) {
        String[] parts = split(path);
        return WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            try {
                // O_PATH first: nothing is opened for real (no device, no terminal, no FIFO) until it is known to be a
                // regular file on a file system of files; then its read permission is checked as the owner
                int fd = walk.asOwner(() -> Linux.openat2(rootFd, String.join("/", parts),
                        O_PATH | walk.lastLink() | O_CLOEXEC, 0, root.resolve()));
                try {
                    walk.refuseKernelFiles(fd, path);
                    Path opened = Path.of("/proc/self/fd/" + fd);
                    BasicFileAttributes attrs = Files.readAttributes(opened, BasicFileAttributes.class);
                    if (attrs.isSymbolicLink()) { // O_PATH | O_NOFOLLOW holds the link itself: never followed
                        throw new RequestException(ErrorCode.INVALID_FILE, "'" + root.shown(path) + "' is a symbolic"
                                + " link; links are never followed here");
                    }
                    if (!attrs.isRegularFile()) {
                        throw new RequestException(ErrorCode.NOT_A_FILE, "'" + path + "' is not a regular file");
                    }
                    Linux.close(walk.asOwner(() -> Linux.openat2(AT_FDCWD, opened.toString(),
                            O_RDONLY | O_NONBLOCK | Linux.O_NOCTTY | O_CLOEXEC, 0, 0)));
                    if (attrs.size() > cap) {
                        throw new RequestException(ErrorCode.FILE_TOO_LARGE, "'" + path + "' has " + attrs.size()
                                + " bytes; downloads are capped at " + cap);
                    }
                    try (InputStream in = Files.newInputStream(opened)) {
                        byte[] data = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, cap + 1));
                        if (data.length > cap) {
                            throw new RequestException(ErrorCode.FILE_TOO_LARGE, "'" + path + "' grew past the download cap of "
                                    + cap + " bytes");
                        }
                        return data;
                    }
                } finally {
                    Linux.close(fd);
                }
            } finally {
                Linux.close(rootFd);
            }
        }, root.shown(path));
    }

    /** Lists one directory ({@code ""} for the workspace itself), sorted by name; symlinks are shown, not followed. */
    public List<Entry> list(String directory) {
        String[] parts = directory == null || directory.isEmpty() || directory.equals(".") ? new String[0]
                : split(directory);
        return WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            int fd = -1;
            try {
                fd = parts.length == 0 ? rootFd : walk.asOwner(() -> Linux.openat2(rootFd, String.join("/", parts),
                        O_PATH | O_DIRECTORY | walk.lastLink() | O_CLOEXEC, 0, root.resolve()));
                walk.refuseKernelFiles(fd, directory);
                String prefix = parts.length == 0 ? "" : String.join("/", parts) + "/";
                List<Entry> entries = new ArrayList<>();
                int dirFd = fd;
                walk.asOwnerIo(() -> { // read and searched as the session's user: what it may not list, it is not told
                    for (String name : PathWalk.names(dirFd)) {
                        if (name.startsWith(".crucible-upload-")) {
                            continue;
                        }
                        try {
                            entries.add(PathWalk.entryOf(dirFd, name, prefix + name));
                        } catch (IOException e) {
                            // removed while we listed
                        }
                    }
                    return null;
                });
                entries.sort(Comparator.comparing(Entry::path));
                return entries;
            } finally {
                if (fd != rootFd && fd >= 0) {
                    Linux.close(fd);
                }
                Linux.close(rootFd);
            }
        }, root.shown(directory == null ? "" : directory));
    }

    /**
     * The entry at {@code path} itself (a symbolic link is shown, not followed); {@code ""} is the directory paths
     * start at (the workspace, or the sandbox's {@code /}), a directory as any other.
     */
    public Entry stat(String path) {
        if (path.isEmpty()) {
            return WorkspaceCalls.run(() -> {
                int rootFd = walk.openRoot();
                try {
                    walk.refuseKernelFiles(rootFd, "");
                    return walk.asOwnerIo(() -> PathWalk.entryOfOpen(rootFd, path));
                } finally {
                    Linux.close(rootFd);
                }
            }, root.shown(path));
        }
        String[] parts = split(path);
        return WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            int dir = -1;
            try {
                dir = walk.directory(rootFd, parts, false);
                int at = dir;
                return walk.asOwnerIo(() -> PathWalk.entryOf(at, parts[parts.length - 1], path));
            } finally {
                PathWalk.closeUnlessRoot(dir, rootFd);
                Linux.close(rootFd);
            }
        }, root.shown(path));
    }

    /**
     * Makes the directory at {@code path} and the missing ones above it ({@code mkdir -p}).
     *
     * @return false when it was there already
     */
    public boolean makeDirectories(String path) {
        String[] parts = split(path);
        return WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            int dir = -1;
            try {
                dir = walk.directory(rootFd, parts, true);
                int at = dir;
                try {
                    walk.asOwner(() -> {
                        Linux.mkdirat(at, parts[parts.length - 1], 0755);
                        return null;
                    });
                    return true;
                } catch (ErrnoException e) {
                    if (e.errno() != Linux.EEXIST) {
                        throw e;
                    }
                    if (!PathWalk.entryOf(dir, parts[parts.length - 1], path).type().equals("directory")) {
                        throw new RequestException(ErrorCode.NOT_A_FILE, "'" + root.shown(path) + "' is there and is not"
                                + " a directory");
                    }
                    return false;
                }
            } finally {
                PathWalk.closeUnlessRoot(dir, rootFd);
                Linux.close(rootFd);
            }
        }, root.shown(path));
    }

    /** Renames {@code from} to {@code to} (replacing a file there), making the directories above {@code to}. */
    public void move(String from, String to) {
        String[] source = split(from);
        String[] target = split(to);
        WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            int fromDir = -1;
            int toDir = -1;
            try {
                fromDir = walk.directory(rootFd, source, false);
                toDir = walk.directory(rootFd, target, true);
                int a = fromDir;
                int b = toDir;
                walk.asOwner(() -> {
                    Linux.renameat(a, source[source.length - 1], b, target[target.length - 1]);
                    return null;
                });
                return null;
            } finally {
                PathWalk.closeUnlessRoot(fromDir, rootFd);
                PathWalk.closeUnlessRoot(toDir, rootFd);
                Linux.close(rootFd);
            }
        }, root.shown(from));
    }

    /** Deletes the file, symlink or directory (with everything in it) at {@code path}. */
    public void delete(String path) {
        String[] parts = split(path);
        WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            int dir = -1;
            try {
                dir = walk.directory(rootFd, parts, false);
                int dirFd = dir;
                String name = parts[parts.length - 1];
                try {
                    walk.asOwner(() -> PathWalk.unlink(dirFd, name, 0));
                } catch (ErrnoException e) {
                    if (e.errno() != Linux.EISDIR) {
                        throw e;
                    }
                    walk.removeTree(dirFd, name, 0);
                }
                return null;
            } finally {
                PathWalk.closeUnlessRoot(dir, rootFd);
                Linux.close(rootFd);
            }
        }, root.shown(path));
    }

    /**
     * Removes everything in the workspace (the directory itself stays), whatever modes the sandbox left: each
     * directory is given back to its owner (0700) through its own descriptor before it is emptied, so a tree the
     * sandbox made unreadable or unwritable ({@code chmod 000}) goes too. Only while no sandbox runs for it.
     */
    public void clear() {
        WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            try {
                walk.ownerOnly(rootFd);
                for (String name : PathWalk.names(rootFd)) {
                    try {
                        walk.asOwner(() -> PathWalk.unlink(rootFd, name, 0));
                    } catch (ErrnoException e) {
                        if (e.errno() == Linux.EISDIR) {
                            walk.removeTree(rootFd, name, 0);
                        }
                    }
                }
                return null;
            } finally {
                Linux.close(rootFd);
            }
        }, root.shown(""));
    }

    /** Bytes in regular files under the workspace (symlinks not followed). */
    public long usage() {
        return WorkspaceCalls.run(() -> {
            int rootFd = walk.openRoot();
            try {
                long[] counted = new long[2];
                walk.sizeOf(rootFd, 0, counted);
                return counted[0];
            } finally {
                Linux.close(rootFd);
            }
        }, root.shown(""));
    }

    private static String[] split(String path) {
        return WorkspacePaths.validate(path).split("/");
    }

}
