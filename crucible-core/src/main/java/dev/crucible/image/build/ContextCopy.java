package dev.crucible.image.build;

import dev.crucible.image.spec.ImageException;
import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A {@link BuildStep.Copy} and a {@link BuildStep.Workdir}'s directory, done by the server in a build's private root
 * between steps. Both sides are hostile: the context is whatever a caller uploaded or pointed at, the root whatever
 * earlier steps left there. So every path goes by descriptors: a source is opened below the context with
 * {@code openat2(RESOLVE_BENEATH)} (a link may lead within the context, never out of it: {@code ../}, an absolute link
 * or one climbing out fails), a link inside a copied directory is copied as a link and never followed, only regular
 * files are read (a FIFO or device is refused before it is opened for reading); a destination's directories are
 * resolved with {@code RESOLVE_IN_ROOT} (a link in the root leads within the root, as it would inside the sandbox),
 * the last name is replaced, never written through, and nothing is written where a sandbox mounts its own file
 * systems ({@code /proc}, {@code /dev}, {@code /sys}, {@code /tmp}, {@code /workspace}, {@code /build}, and
 * {@code /etc/passwd}, {@code group}, {@code hosts}), where it would be lost or hidden. Not thread-safe.
 */
final class ContextCopy {
    private static final int AT_FDCWD = -100;
    private static final int DIR_FLAGS = Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_CLOEXEC;
    private static final int PATH_FLAGS = Linux.O_PATH | Linux.O_CLOEXEC;
    private static final long IN_CONTEXT = Linux.RESOLVE_BENEATH | Linux.RESOLVE_NO_MAGICLINKS;
    private static final Set<String> MOUNTED = Set.of("proc", "dev", "sys", "tmp", "workspace", "build");
    private static final Set<String> MOUNTED_FILES = Set.of("etc/passwd", "etc/group", "etc/hosts");

    private final int rootFd;
    private long bytes;
    private long files;

    private ContextCopy(int rootFd) {
        this.rootFd = rootFd;
    }

    /** What one copy did. */
    record Copied(long files, long bytes) {}

    /** Makes the absolute directory {@code path} (and its parents) in {@code root}, as {@code mkdir -p} would. */
    static void mkdirs(Path root, String path) throws IOException {
        int top = openTop(root);
        try {
            new ContextCopy(top).directory(relative(path), 0755);
        } finally {
            Linux.close(top);
        }
    }

    /**
     * Copies {@code copy}'s sources from {@code context} to {@code destination} (absolute) in {@code root}.
     *
     * @throws ImageException INVALID_BUILD naming the source or destination that is outside the context, missing,
     *     not a file or directory, or where a sandbox mounts
     */
    static Copied copy(Path context, BuildStep.Copy copy, String destination, Path root) throws IOException {
        if (context == null) {
            throw invalid("COPY " + String.join(" ", copy.sources()) + " needs a build context: give the context"
                    + " directory (crucible image build -f Dockerfile CONTEXT) or upload the files");
        }
        int top = openTop(root);
        int contextFd = Linux.openat2(AT_FDCWD, context.toAbsolutePath().toString(), DIR_FLAGS, 0,
                Linux.RESOLVE_NO_MAGICLINKS);
        try {
            ContextCopy c = new ContextCopy(top);
            List<String> sources = new ArrayList<>();
            boolean glob = false;
            for (String source : copy.sources()) {
                String rel = inContext(source);
                int slash = rel.lastIndexOf('/');
                String last = rel.substring(slash + 1);
                if (last.matches(".*[*?\\[].*")) {
                    glob = true;
                    sources.addAll(c.matches(contextFd, slash < 0 ? "" : rel.substring(0, slash), last, source));
                } else {
                    sources.add(rel);
                }
            }
            String dest = relative(destination);
            boolean intoDirectory = destination.endsWith("/") || copy.sources().size() > 1 || glob
                    || c.isDirectory(dest);
            for (String source : sources) {
                int fd = openSource(contextFd, source);
                try {
                    int type = typeOf(fd);
                    if (type == Linux.S_IFDIR) {
                        int to = c.directory(dest, copy.mode() == null ? 0755 : copy.mode());
                        try {
                            c.copyTree(fd, to, dest, copy.mode());
                        } finally {
                            Linux.close(to);
                        }
                    } else if (type == Linux.S_IFREG) {
                        String name = source.substring(source.lastIndexOf('/') + 1);
                        String target = intoDirectory ? join(dest, name) : dest;
                        int slash = target.lastIndexOf('/');
                        int parent = c.directory(slash < 0 ? "" : target.substring(0, slash), 0755);
                        try {
                            c.file(fd, parent, target, copy.mode());
                        } finally {
                            Linux.close(parent);
                        }
                    } else {
                        throw invalid("COPY source '" + source + "' is not a regular file or directory");
                    }
                } finally {
                    Linux.close(fd);
                }
            }
            return new Copied(c.files, c.bytes);
        } finally {
            Linux.close(contextFd);
            Linux.close(top);
        }
    }

    private static int openTop(Path root) throws ErrnoException {
        return Linux.openat2(AT_FDCWD, root.toAbsolutePath().toString(), DIR_FLAGS | Linux.O_NOFOLLOW, 0,
                Linux.RESOLVE_NO_SYMLINKS | Linux.RESOLVE_NO_MAGICLINKS);
    }

    /** A source relative to the context, {@code .} parts gone; one that climbs out of it is refused. */
    private static String inContext(String source) throws ImageException {
        List<String> parts = new ArrayList<>();
        for (String part : source.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (parts.isEmpty()) {
                    throw invalid("COPY source '" + source + "' is outside the build context; copy only files"
                            + " inside it");
                }
                parts.removeLast();
                continue;
            }
            parts.add(part);
        }
        return String.join("/", parts);
    }

    private static int openSource(int contextFd, String source) throws IOException {
        try {
            return Linux.openat2(contextFd, source.isEmpty() ? "." : source, PATH_FLAGS, 0, IN_CONTEXT);
        } catch (ErrnoException e) {
            if (e.errno() == Linux.EXDEV || e.errno() == Linux.ELOOP) {
                throw invalid("COPY source '" + source + "' leads out of the build context through a link");
            }
            if (e.errno() == Linux.ENOENT || e.errno() == Linux.ENOTDIR) {
                throw invalid("COPY source '" + source + "' is not in the build context");
            }
            throw e;
        }
    }

    /** The file type of an open descriptor, read through its magic link (never a path someone could swap). */
    private static int typeOf(int fd) throws IOException {
        PosixFileAttributes a = Files.readAttributes(Path.of("/proc/self/fd/" + fd), PosixFileAttributes.class);
        return a.isDirectory() ? Linux.S_IFDIR : a.isRegularFile() ? Linux.S_IFREG : 0;
    }

    private List<String> matches(int contextFd, String dir, String glob, String source) throws IOException {
        Pattern pattern = Pattern.compile(glob.replace(".", "\\.").replace("*", "[^/]*").replace("?", "[^/]"));
        int fd = openSource(contextFd, dir);
        try {
            List<String> found = Linux.listNames(fd).stream().filter(n -> pattern.matcher(n).matches()).sorted()
                    .map(n -> dir.isEmpty() ? n : dir + "/" + n).toList();
            if (found.isEmpty()) {
                throw invalid("COPY source '" + source + "' matches nothing in the build context");
            }
            return found;
        } finally {
            Linux.close(fd);
        }
    }

    private boolean isDirectory(String path) throws IOException {
        try {
            Linux.close(Linux.openat2(rootFd, path.isEmpty() ? "." : path, DIR_FLAGS, 0,
                    Linux.RESOLVE_IN_ROOT | Linux.RESOLVE_NO_MAGICLINKS));
            return true;
        } catch (ErrnoException e) {
            return false;
        }
    }

    /** Opens (making what is missing) the directory {@code path} of the root; returns its O_PATH descriptor. */
    private int directory(String path, int mode) throws IOException {
        checkWritable(path);
        int fd = Linux.openat2(rootFd, ".", DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
        String sofar = "";
        for (String part : path.isEmpty() ? new String[0] : path.split("/")) {
            sofar = join(sofar, part);
            try {
                int next = Linux.openat2(rootFd, sofar, DIR_FLAGS, 0,
                        Linux.RESOLVE_IN_ROOT | Linux.RESOLVE_NO_MAGICLINKS);
                Linux.close(fd);
                fd = next;
            } catch (ErrnoException e) {
                if (e.errno() != Linux.ENOENT) {
                    Linux.close(fd);
                    throw invalid("cannot make the directory /" + sofar + " in the image: something not a directory"
                            + " is there (" + e.getMessage() + ")");
                }
                try {
                    if (exists(fd, part)) {
                        throw invalid("cannot make the directory /" + sofar + " in the image: a link there leads to"
                                + " no directory inside the image (links resolve within the image's root)");
                    }
                    Linux.mkdirat(fd, part, mode);
                    int next = Linux.openat2(fd, part, DIR_FLAGS | Linux.O_NOFOLLOW, 0, Linux.RESOLVE_STRICT);
                    Linux.fchmodPath(next, mode);
                    Linux.close(fd);
                    fd = next;
                } catch (IOException made) {
                    Linux.close(fd);
                    throw made;
                }
            }
        }
        return fd;
    }

    private static boolean exists(int dirFd, String name) throws ErrnoException {
        try {
            Linux.lstatMode(dirFd, name);
            return true;
        } catch (ErrnoException e) {
            if (e.errno() != Linux.ENOENT) {
                throw e;
            }
            return false;
        }
    }

    /** Copies the directory {@code fromFd}'s entries into {@code toFd} (the root's {@code path}), recursively. */
    private void copyTree(int fromFd, int toFd, String path, Integer mode) throws IOException {
        for (String name : Linux.listNames(fromFd)) {
            String target = join(path, name);
            checkWritable(target);
            Linux.Stat stat = Linux.lstat(fromFd, name);
            int type = stat.mode() & Linux.S_IFMT;
            if (type == Linux.S_IFDIR) {
                int from = Linux.openat2(fromFd, name, DIR_FLAGS | Linux.O_NOFOLLOW, 0, Linux.RESOLVE_STRICT);
                try {
                    int to = subdirectory(toFd, name, mode == null ? stat.mode() & 0777 : mode);
                    try {
                        copyTree(from, to, target, mode);
                    } finally {
                        Linux.close(to);
                    }
                } finally {
                    Linux.close(from);
                }
            } else if (type == Linux.S_IFREG) {
                int from = Linux.openat2(fromFd, name, PATH_FLAGS | Linux.O_NOFOLLOW, 0, Linux.RESOLVE_STRICT);
                try {
                    file(from, toFd, target, mode);
                } finally {
                    Linux.close(from);
                }
            } else if (type == Linux.S_IFLNK) {
                String link = Linux.readlinkat(fromFd, name);
                replace(toFd, name);
                Linux.symlinkat(link, toFd, name);
                files++;
            } else {
                throw invalid("COPY cannot copy /" + target + ": the context has a FIFO, socket or device there");
            }
        }
    }

    private int subdirectory(int parentFd, String name, int mode) throws IOException {
        try {
            return Linux.openat2(parentFd, name, DIR_FLAGS | Linux.O_NOFOLLOW, 0, Linux.RESOLVE_STRICT);
        } catch (ErrnoException e) {
            replace(parentFd, name);
            Linux.mkdirat(parentFd, name, 0700);
            int fd = Linux.openat2(parentFd, name, DIR_FLAGS | Linux.O_NOFOLLOW, 0, Linux.RESOLVE_STRICT);
            Linux.fchmodPath(fd, mode);
            return fd;
        }
    }

    /** Writes the regular file {@code fromFd} (O_PATH) as {@code target}'s last name in {@code parentFd}. */
    private void file(int fromFd, int parentFd, String target, Integer mode) throws IOException {
        checkWritable(target);
        Path source = Path.of("/proc/self/fd/" + fromFd);
        PosixFileAttributes a = Files.readAttributes(source, PosixFileAttributes.class);
        if (!a.isRegularFile()) {
            throw invalid("COPY cannot copy /" + target + ": its source is not a regular file");
        }
        int permissions = mode != null ? mode : bits(a);
        String name = target.substring(target.lastIndexOf('/') + 1);
        replace(parentFd, name);
        int out = Linux.openat2(parentFd, name, Linux.O_WRONLY | Linux.O_CREAT | Linux.O_EXCL | Linux.O_NOFOLLOW
                | Linux.O_CLOEXEC, 0600, Linux.RESOLVE_STRICT);
        try (InputStream in = Files.newInputStream(source);
                OutputStream to = Files.newOutputStream(Path.of("/proc/self/fd/" + out))) {
            bytes += in.transferTo(to);
            Linux.fchmodPath(out, permissions);
        } finally {
            Linux.close(out);
        }
        files++;
    }

    /** Removes what {@code name} is in {@code parentFd} unless it is a directory (which is merged into). */
    private static void replace(int parentFd, String name) throws IOException {
        try {
            int mode = Linux.lstatMode(parentFd, name);
            if ((mode & Linux.S_IFMT) == Linux.S_IFDIR) {
                throw invalid("COPY would replace the directory '" + name + "' in the image with a file");
            }
            Linux.unlinkat(parentFd, name, 0);
        } catch (ErrnoException e) {
            if (e.errno() != Linux.ENOENT) {
                throw e;
            }
        }
    }

    private static void checkWritable(String path) throws ImageException {
        String top = path.contains("/") ? path.substring(0, path.indexOf('/')) : path;
        if (MOUNTED.contains(top) || MOUNTED_FILES.contains(path)) {
            throw invalid("cannot write /" + path + " in an image: a sandbox mounts its own /" + top + " there, so"
                    + " it would be hidden; choose another directory (/opt, /home/user, /app)");
        }
    }

    private static int bits(PosixFileAttributes a) {
        int bits = 0;
        for (PosixFilePermission p : a.permissions()) {
            bits |= 0400 >> p.ordinal();
        }
        return bits;
    }

    private static String relative(String absolute) {
        String stripped = absolute.replaceAll("/+", "/");
        while (stripped.startsWith("/")) {
            stripped = stripped.substring(1);
        }
        while (stripped.endsWith("/")) {
            stripped = stripped.substring(0, stripped.length() - 1);
        }
        return stripped.equals(".") ? "" : stripped;
    }

    private static String join(String dir, String name) {
        return dir.isEmpty() ? name : dir + "/" + name;
    }

    private static ImageException invalid(String message) {
        return new ImageException(ImageException.Failure.INVALID_BUILD, message);
    }
}
