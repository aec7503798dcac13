package dev.crucible.image.layer;

import static dev.crucible.os.Linux.AT_REMOVEDIR;
import static dev.crucible.os.Linux.O_CLOEXEC;
import static dev.crucible.os.Linux.O_CREAT;
import static dev.crucible.os.Linux.O_DIRECTORY;
import static dev.crucible.os.Linux.O_EXCL;
import static dev.crucible.os.Linux.O_NOFOLLOW;
import static dev.crucible.os.Linux.O_PATH;
import static dev.crucible.os.Linux.O_WRONLY;
import static dev.crucible.os.Linux.RESOLVE_STRICT;

import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.function.Predicate;

/**
 * An image root being unpacked, reached only through descriptors: every path is resolved by the kernel below the
 * root's descriptor with {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)}, and every
 * last component is created, replaced or removed with a {@code *at} call on its parent's descriptor that never
 * follows a link. Nothing here can reach outside the root, whatever the layers planted in it.
 *
 * <p>Paths are relative to the root, {@code /}-separated, already checked (no {@code ..}, no empty or {@code .}
 * component, nothing but the root is {@code ""}). Directories stay at least {@code rwx} for their owner while
 * layers are applied; their final modes (and times) are kept in a map shared across layers and applied by
 * {@link #applyDirModes()}.
 */
final class RootFs implements AutoCloseable {
    private static final int AT_FDCWD = -100;
    private static final int DIR_FLAGS = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    private static final int CREATE_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

    /** What a name is, never following it. */
    enum Kind { MISSING, DIRECTORY, FILE, SYMLINK, OTHER }

    /** A directory's final mode and modification time, applied once every layer is in. */
    record DirMeta(int mode, FileTime mtime) {}

    /** A path the rules refuse (a symlink or a non-directory on the way, a bad link target). */
    static final class Refused extends IOException {
        Refused(String rule) {
            super(rule);
        }
    }

    /** The body of a regular file being written. */
    @FunctionalInterface
    interface Body {
        void write(OutputStream out) throws IOException;
    }

    private final int rootFd;
    private final NavigableMap<String, DirMeta> dirModes;

    private RootFs(int rootFd, NavigableMap<String, DirMeta> dirModes) {
        this.rootFd = rootFd;
        this.dirModes = dirModes;
    }

    /** Opens the existing directory {@code root}; {@code dirModes} collects final directory modes across layers. */
    static RootFs open(Path root, NavigableMap<String, DirMeta> dirModes) throws IOException {
        int fd = Linux.openat2(AT_FDCWD, root.toRealPath().toString(), DIR_FLAGS, 0,
                Linux.RESOLVE_NO_SYMLINKS | Linux.RESOLVE_NO_MAGICLINKS);
        return new RootFs(fd, dirModes);
    }

    /** An open directory below the root and its path ({@code ""} for the root, whose descriptor stays open). */
    final class Dir implements AutoCloseable {
        final int fd;
        final String path;

        private Dir(int fd, String path) {
            this.fd = fd;
            this.path = path;
        }

        String child(String name) {
            return path.isEmpty() ? name : path + "/" + name;
        }

        @Override
        public void close() {
            if (fd != rootFd) {
                Linux.close(fd);
            }
        }
    }

    Dir root() {
        return new Dir(rootFd, "");
    }

    /**
     * The directory {@code parts} names, without following any symlink; missing directories are created (0755) when
     * {@code create}, else the answer is null.
     *
     * @throws Refused when a component is a symlink or not a directory
     */
    Dir directory(List<String> parts, boolean create) throws IOException {
        if (parts.isEmpty()) {
            return root();
        }
        String path = String.join("/", parts);
        try {
            return new Dir(Linux.openat2(rootFd, path, DIR_FLAGS, 0, RESOLVE_STRICT), path);
        } catch (ErrnoException e) {
            if (e.errno() != Linux.ENOENT && e.errno() != Linux.ELOOP && e.errno() != Linux.ENOTDIR) {
                throw e;
            }
        }
        return walk(parts, create);
    }

    /** Opens {@code parts} one component at a time, saying which one is refused and creating the missing ones. */
    private Dir walk(List<String> parts, boolean create) throws IOException {
        Dir current = root();
        try {
            for (String part : parts) {
                String path = current.child(part);
                Kind kind = kind(current.fd, part);
                if (kind == Kind.MISSING && !create) {
                    current.close();
                    return null;
                }
                if (kind == Kind.MISSING) {
                    Linux.mkdirat(current.fd, part, 0700);
                } else if (kind == Kind.SYMLINK) {
                    throw new Refused("the path goes through symlink '" + path + "'");
                } else if (kind != Kind.DIRECTORY) {
                    throw new Refused("the path goes through '" + path + "', which is not a directory");
                }
                Dir next = new Dir(Linux.openat2(current.fd, part, DIR_FLAGS, 0, RESOLVE_STRICT), path);
                current.close();
                current = next;
                if (kind == Kind.MISSING) {
                    Linux.fchmodPath(current.fd, 0755);
                }
            }
            return current;
        } catch (IOException | RuntimeException e) {
            current.close();
            throw e;
        }
    }

    /** What {@code name} is in the open directory {@code dirFd}, not following it if it is a link. */
    static Kind kind(int dirFd, String name) throws IOException {
        int mode;
        try {
            mode = Linux.lstatMode(dirFd, name);
        } catch (ErrnoException e) {
            if (e.errno() == Linux.ENOENT) {
                return Kind.MISSING;
            }
            throw e;
        }
        return switch (mode & Linux.S_IFMT) {
            case Linux.S_IFDIR -> Kind.DIRECTORY;
            case Linux.S_IFREG -> Kind.FILE;
            case Linux.S_IFLNK -> Kind.SYMLINK;
            default -> Kind.OTHER;
        };
    }

    /**
     * Makes {@code name} a directory: an existing one is kept (merged) with its mode updated, anything else is
     * removed first. It stays {@code rwx} for the owner until {@link #applyDirModes()} gives it {@code mode}.
     */
    void mkdir(Dir parent, String name, int mode, FileTime mtime) throws IOException {
        Kind kind = kind(parent.fd, name);
        if (kind != Kind.DIRECTORY) {
            remove(parent, name);
            Linux.mkdirat(parent.fd, name, 0700);
        }
        String path = parent.child(name);
        try (Dir dir = new Dir(Linux.openat2(parent.fd, name, DIR_FLAGS, 0, RESOLVE_STRICT), path)) {
            Linux.fchmodPath(dir.fd, mode | 0700);
        }
        dirModes.put(path, new DirMeta(mode, mtime));
    }

    /**
     * Replaces {@code name} with a new regular file ({@code O_CREAT | O_EXCL | O_NOFOLLOW}: a link planted there is
     * removed, never written through) holding what {@code body} writes, then gives it {@code mode} and {@code mtime}.
     */
    void writeFile(Dir parent, String name, int mode, FileTime mtime, Body body) throws IOException {
        remove(parent, name);
        int fd = Linux.openat2(parent.fd, name, CREATE_FLAGS, 0600, RESOLVE_STRICT);
        try {
            Path opened = Path.of("/proc/self/fd/" + fd);
            try (OutputStream out = Files.newOutputStream(opened, StandardOpenOption.WRITE)) {
                body.write(out);
            }
            Linux.fchmodPath(fd, mode);
            if (mtime != null) {
                Files.setLastModifiedTime(opened, mtime);
            }
        } finally {
            Linux.close(fd);
        }
    }

    /** Replaces {@code name} with a symlink holding {@code target} as text (never resolved here). */
    void symlink(Dir parent, String name, String target) throws IOException {
        remove(parent, name);
        Linux.symlinkat(target, parent.fd, name);
    }

    /**
     * Replaces {@code name} with a hard link to {@code targetName} in {@code targetDir}, which must be a regular file
     * or a symlink (linked itself, never followed).
     *
     * @throws Refused when the target is missing or of another kind
     */
    void hardlink(Dir targetDir, String targetName, Dir parent, String name) throws IOException {
        String target = targetDir.child(targetName);
        Kind kind = kind(targetDir.fd, targetName);
        if (kind == Kind.MISSING) {
            throw new Refused("the hard link's target '" + target + "' does not exist in the image");
        }
        if (kind != Kind.FILE && kind != Kind.SYMLINK) {
            throw new Refused("the hard link's target '" + target + "' is a " + kind.name().toLowerCase()
                    + "; only regular files and symlinks may be linked");
        }
        remove(parent, name);
        try {
            Linux.linkat(targetDir.fd, targetName, parent.fd, name, 0);
        } catch (ErrnoException e) {
            if (e.errno() != Linux.ENOENT) {
                throw e;
            }
            throw new Refused("the hard link's target '" + target + "' was removed by replacing '"
                    + parent.child(name) + "'");
        }
    }

    /** Removes {@code name} whatever it is (a directory with all it holds), never following a link; missing is fine. */
    void remove(Dir parent, String name) throws IOException {
        try {
            Linux.unlinkat(parent.fd, name, 0);
        } catch (ErrnoException e) {
            if (e.errno() == Linux.ENOENT) {
                return;
            }
            if (e.errno() != Linux.EISDIR) {
                throw e;
            }
            removeTree(parent.child(name));
        }
        forget(parent.child(name));
    }

    /** A directory being removed: its path and the subdirectories in it still to remove. */
    private record Pending(String path, Iterator<String> subdirectories) {}

    /**
     * Removes the directory {@code path} and its contents, one directory at a time through descriptors opened below
     * the root, depth first with a stack of its own (a chain as deep as a name allows, 2000 directories, must not
     * overflow the thread's); no descriptor is held while going deeper, so depth costs no descriptors.
     */
    private void removeTree(String path) throws IOException {
        Deque<Pending> stack = new ArrayDeque<>();
        stack.push(new Pending(path, removeFiles(path)));
        while (!stack.isEmpty()) {
            Pending current = stack.peek();
            if (current.subdirectories().hasNext()) {
                String child = current.subdirectories().next();
                stack.push(new Pending(child, removeFiles(child)));
                continue;
            }
            stack.pop();
            int slash = current.path().lastIndexOf('/');
            List<String> parent = slash < 0 ? List.of() : List.of(current.path().substring(0, slash).split("/"));
            try (Dir dir = directory(parent, false)) {
                Linux.unlinkat(dir.fd, current.path().substring(slash + 1), AT_REMOVEDIR);
            }
        }
    }

    /** Removes everything in the directory {@code path} but directories, whose paths it returns. */
    private Iterator<String> removeFiles(String path) throws IOException {
        List<String> subdirectories = new ArrayList<>();
        try (Dir dir = new Dir(Linux.openat2(rootFd, path, DIR_FLAGS, 0, RESOLVE_STRICT), path)) {
            for (String child : names(dir.fd)) {
                try {
                    Linux.unlinkat(dir.fd, child, 0);
                } catch (ErrnoException e) {
                    if (e.errno() != Linux.EISDIR) {
                        throw e;
                    }
                    subdirectories.add(dir.child(child));
                }
            }
        }
        return subdirectories.iterator();
    }

    /** Drops the final modes recorded for {@code path} and everything below it. */
    private void forget(String path) {
        dirModes.remove(path);
        dirModes.subMap(path + "/", path + "0").clear(); // '0' is the character after '/'
    }

    /**
     * Removes everything below the directory {@code path} that {@code keep} does not name, recursing into the kept
     * directories except those {@code done} names (pruned already: an opaque directory keeps only what the current
     * layer wrote).
     */
    void prune(String path, Predicate<String> keep, Predicate<String> done) throws IOException {
        Deque<String> pending = new ArrayDeque<>(List.of(path)); // kept directories still to prune: no recursion
        while (!pending.isEmpty()) {
            String current = pending.pop();
            try (Dir dir = directory(current.isEmpty() ? List.of() : List.of(current.split("/")), false)) {
                if (dir == null) {
                    continue;
                }
                for (String child : names(dir.fd)) {
                    String childPath = dir.child(child);
                    if (!keep.test(childPath)) {
                        remove(dir, child);
                    } else if (!done.test(childPath) && kind(dir.fd, child) == Kind.DIRECTORY) {
                        pending.push(childPath);
                    }
                }
            }
        }
    }

    /** Makes {@code name} (in the root) a directory, mode 0755, unless it is one: a symlink there is replaced. */
    void ensureDirectory(String name) throws IOException {
        Dir root = root();
        if (kind(root.fd, name) != Kind.DIRECTORY) {
            remove(root, name);
            Linux.mkdirat(root.fd, name, 0755);
            try (Dir dir = new Dir(Linux.openat2(root.fd, name, DIR_FLAGS, 0, RESOLVE_STRICT), name)) {
                Linux.fchmodPath(dir.fd, 0755);
            }
        }
    }

    /** Makes {@code name} an empty regular file, mode 0644, unless it is a regular file already. */
    void ensureFile(Dir parent, String name) throws IOException {
        if (kind(parent.fd, name) != Kind.FILE) {
            writeFile(parent, name, 0644, null, out -> { });
        }
    }

    /** Gives every directory the layers named its final mode and time (directories removed since are gone). */
    void applyDirModes() throws IOException {
        for (Map.Entry<String, DirMeta> e : dirModes.entrySet()) {
            try (Dir dir = directory(List.of(e.getKey().split("/")), false)) {
                if (dir == null) {
                    continue;
                }
                Linux.fchmodPath(dir.fd, e.getValue().mode());
                if (e.getValue().mtime() != null) {
                    Files.setLastModifiedTime(Path.of("/proc/self/fd/" + dir.fd), e.getValue().mtime());
                }
            } catch (Refused gone) {
                // replaced since by something else: every replacement forgets, so this is only defence in depth
            }
        }
    }

    void chmodRoot(int mode) throws IOException {
        Linux.fchmodPath(rootFd, mode);
    }

    /** The entries of an open directory, read through its descriptor (names as UTF-8, whatever the locale). */
    private static List<String> names(int dirFd) throws IOException {
        return Linux.listNames(dirFd);
    }

    @Override
    public void close() {
        Linux.close(rootFd);
    }
}
