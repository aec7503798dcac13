package dev.crucible.session.workspace;

import static dev.crucible.os.Linux.AT_REMOVEDIR;
import static dev.crucible.os.Linux.O_CLOEXEC;
import static dev.crucible.os.Linux.O_DIRECTORY;
import static dev.crucible.os.Linux.O_NOFOLLOW;
import static dev.crucible.os.Linux.O_PATH;
import static dev.crucible.os.Linux.RESOLVE_STRICT;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * How {@link Workspace} walks a path: every directory opened from the root in one {@code openat2} with the root's
 * resolve flags, each call made as the session's file-system uid, kernel file systems refused under a sandbox's root.
 */
final class PathWalk {
    static final int MAX_DEPTH = 64;
    private static final int MAX_ENTRIES = 100_000;

    private final FileRoot root;
    /** The host uid path calls are made as (0 to 2^32-2: a root block's uids pass 2^31), or -1 for the server's. */
    private final long uid;

    PathWalk(FileRoot root, long uid) {
        this.root = root;
        this.uid = uid;
    }

    /** Opens the directory that holds the last component of {@code parts}, creating the missing ones if asked. */
    int directory(int rootFd, String[] parts, boolean create) throws IOException {
        if (parts.length == 1) {
            refuseKernelFiles(rootFd, "");
            return rootFd;
        }
        if (!create) {
            int dir = openDirectory(rootFd, parts, parts.length - 1);
            return kernelFilesClosed(dir, parts);
        }
        int current = rootFd;
        try {
            for (int i = 0; i < parts.length - 1; i++) {
                int at = current;
                String part = parts[i];
                try {
                    asOwner(() -> {
                        Linux.mkdirat(at, part, 0755);
                        return null;
                    });
                } catch (ErrnoException e) {
                    if (e.errno() != Linux.EEXIST) {
                        throw e;
                    }
                }
                // the whole prefix again from the root: in a sandbox's root a link resolves against that root
                int next = openDirectory(rootFd, parts, i + 1);
                if (current != rootFd) {
                    Linux.close(current);
                }
                current = next;
                refuseKernelFiles(current, String.join("/", Arrays.copyOf(parts, i + 1)));
            }
            return current;
        } catch (IOException | RuntimeException e) {
            if (current != rootFd) {
                Linux.close(current);
            }
            throw e;
        }
    }

    int openRoot() throws IOException {
        return root.open();
    }

    /** The directory named by the first {@code count} components, every one resolved as the root resolves them. */
    int openDirectory(int rootFd, String[] parts, int count) throws ErrnoException {
        String prefix = String.join("/", Arrays.copyOf(parts, count));
        return asOwner(() -> Linux.openat2(rootFd, prefix, O_PATH | O_DIRECTORY | lastLink() | O_CLOEXEC, 0,
                root.resolve()));
    }

    int kernelFilesClosed(int dir, String[] parts) throws IOException {
        try {
            refuseKernelFiles(dir, String.join("/", parts));
            return dir;
        } catch (IOException | RuntimeException e) {
            Linux.close(dir);
            throw e;
        }
    }

    /** {@code O_NOFOLLOW} unless the root follows a path's last link. */
    int lastLink() {
        return root.followsLinks() ? 0 : O_NOFOLLOW;
    }

    void refuseKernelFiles(int fd, String path) throws IOException {
        if (root instanceof FileRoot.SandboxRoot) {
            FileRoot.SandboxRoot.refuseKernelFiles(fd, path);
        }
    }

    static void closeUnlessRoot(int fd, int rootFd) {
        if (fd >= 0 && fd != rootFd) {
            Linux.close(fd);
        }
    }

    @FunctionalInterface
    interface PathCall<T> {
        T call() throws ErrnoException;
    }

    @FunctionalInterface
    interface IoCall<T> {
        T call() throws IOException;
    }

    /** Runs one path operation with the session's uid and gid as this thread's file-system ids. */
    <T> T asOwner(PathCall<T> call) throws ErrnoException {
        try {
            return asOwnerIo(call::call);
        } catch (ErrnoException e) {
            throw e;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * As {@link #asOwner}, for calls the JDK makes (a listing, a stat through {@code /proc/self/fd}): the kernel checks
     * them as the session's user too. The switch is verified, and a thread found with another id than root's refuses.
     */
    <T> T asOwnerIo(IoCall<T> call) throws IOException {
        if (uid < 0) {
            return call.call();
        }
        if (Linux.fsuid() != 0) {
            throw new IllegalStateException("the files thread " + Thread.currentThread() + " is not root's any more");
        }
        Linux.setfsids((int) uid, (int) uid); // uid_t: the int's 32 bits as they are
        try {
            if (Linux.fsuid() != (int) uid) {
                throw new IllegalStateException("cannot take the file-system uid " + Integer.toUnsignedString((int) uid));
            }
            return call.call();
        } finally {
            Linux.setfsids(0, 0);
            if (Linux.fsuid() != 0) {
                throw new IllegalStateException("cannot restore the file-system uid of " + Thread.currentThread());
            }
        }
    }

    void sizeOf(int dirFd, int depth, long[] counted) throws IOException {
        for (String name : names(dirFd)) {
            if (++counted[1] > MAX_ENTRIES) {
                return;
            }
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(Path.of("/proc/self/fd/" + dirFd, name), BasicFileAttributes.class,
                        LinkOption.NOFOLLOW_LINKS);
            } catch (IOException e) {
                continue;
            }
            if (a.isRegularFile()) {
                counted[0] += a.size();
            } else if (a.isDirectory() && depth < MAX_DEPTH) {
                int fd;
                try {
                    fd = asOwner(() -> Linux.openat2(dirFd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0,
                            RESOLVE_STRICT));
                } catch (ErrnoException e) {
                    continue; // swapped for something else meanwhile
                }
                try {
                    sizeOf(fd, depth + 1, counted);
                } finally {
                    Linux.close(fd);
                }
            }
        }
    }

    void removeTree(int parentFd, String name, int depth) throws IOException {
        if (depth > MAX_DEPTH) {
            throw new RequestException(ErrorCode.NOT_A_FILE, "directory nesting deeper than " + MAX_DEPTH);
        }
        int fd = asOwner(() -> Linux.openat2(parentFd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0,
                RESOLVE_STRICT));
        try {
            ownerOnly(fd);
            for (String child : names(fd)) {
                try {
                    asOwner(() -> unlink(fd, child, 0));
                } catch (ErrnoException e) {
                    if (e.errno() != Linux.EISDIR) {
                        throw e;
                    }
                    removeTree(fd, child, depth + 1);
                }
            }
        } finally {
            Linux.close(fd);
        }
        asOwner(() -> unlink(parentFd, name, AT_REMOVEDIR));
    }

    /**
     * Makes the open directory {@code rwx------} as its owner: chmod through the descriptor's magic link reaches
     * exactly the directory opened (never a path the sandbox could swap), and only the owner may change its mode.
     */
    void ownerOnly(int dirFd) throws IOException {
        asOwner(() -> {
            Linux.fchmodPath(dirFd, 0700);
            return null;
        });
    }

    static Void unlink(int dirFd, String name, int flags) throws ErrnoException {
        Linux.unlinkat(dirFd, name, flags);
        return null;
    }

    /** The entries of an open directory, read through its descriptor (the magic link is the directory itself). */
    static List<String> names(int dirFd) throws IOException {
        try (var list = Files.list(Path.of("/proc/self/fd/" + dirFd))) {
            return list.map(p -> p.getFileName().toString()).limit(MAX_ENTRIES).toList();
        }
    }

    /** The entry {@code name} of the open directory {@code dirFd}, not followed when it is a link. */
    static Workspace.Entry entryOf(int dirFd, String name, String shown) throws IOException {
        return entry(Path.of("/proc/self/fd/" + dirFd, name), shown, () -> Linux.readlinkat(dirFd, name),
                LinkOption.NOFOLLOW_LINKS);
    }

    /**
     * The file open as {@code fd} itself: its magic link in {@code /proc/self} followed, which the kernel resolves to
     * exactly the file opened (no name is looked up again).
     */
    static Workspace.Entry entryOfOpen(int fd, String shown) throws IOException {
        return entry(Path.of("/proc/self/fd/" + fd), shown, () -> null);
    }

    private static Workspace.Entry entry(Path p, String shown, IoCall<String> target, LinkOption... options)
            throws IOException {
        Map<String, Object> a = Files.readAttributes(p, "unix:mode,uid,size,lastModifiedTime,isRegularFile,"
                + "isDirectory,isSymbolicLink", options);
        boolean file = (Boolean) a.get("isRegularFile");
        boolean link = (Boolean) a.get("isSymbolicLink");
        String type = file ? "file" : (Boolean) a.get("isDirectory") ? "directory" : link ? "symlink" : "other";
        return new Workspace.Entry(shown, type, file ? (Long) a.get("size") : 0,
                ((FileTime) a.get("lastModifiedTime")).toMillis(), (Integer) a.get("mode"),
                Integer.toUnsignedLong((Integer) a.get("uid")), link ? target.call() : null);
    }

}
