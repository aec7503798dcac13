package dev.crucible.session.workspace;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * A fork's copy of a session's workspace (issue 30): the tree as the paused session left it, owned by the fork's uid.
 * Directories, regular files and symbolic links (as links, never followed: they resolve inside the fork's sandbox as
 * they did in its parent's) are copied; anything else (a FIFO, a socket, a device node) is left out, and so is the
 * file system's own {@code lost+found}. The parent must not run meanwhile (it is paused).
 */
public final class WorkspaceCopy {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private WorkspaceCopy() {}

    /**
     * Copies the tree under {@code from} into {@code to} (an existing, empty workspace), each entry owned by
     * {@code uid} (-1: left as the copy made it). Returns how many bytes of files it copied.
     *
     * @throws IOException when a copy fails (the fork's disk full, say); what was copied stays for the caller to remove
     */
    public static long copy(Path from, Path to, int uid) throws IOException {
        long[] bytes = {0};
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                Path rel = from.relativize(dir);
                if (rel.toString().equals("lost+found")) {
                    return FileVisitResult.SKIP_SUBTREE;
                }
                Path target = to.resolve(rel);
                if (!rel.toString().isEmpty()) {
                    Files.createDirectory(target);
                }
                own(dir, target);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Path target = to.resolve(from.relativize(file));
                if (attrs.isSymbolicLink()) {
                    Files.createSymbolicLink(target, Files.readSymbolicLink(file));
                } else if (attrs.isRegularFile()) {
                    Files.copy(file, target, NOFOLLOW, StandardCopyOption.COPY_ATTRIBUTES);
                    bytes[0] += attrs.size();
                } else {
                    return FileVisitResult.CONTINUE; // a FIFO, a socket, a device: not a file to copy
                }
                own(file, target);
                return FileVisitResult.CONTINUE;
            }

            private void own(Path source, Path target) throws IOException {
                if (!Files.isSymbolicLink(target)) {
                    Files.setPosixFilePermissions(target, Files.getPosixFilePermissions(source, NOFOLLOW));
                }
                if (uid >= 0) {
                    Files.setAttribute(target, "unix:uid", uid, NOFOLLOW);
                    Files.setAttribute(target, "unix:gid", uid, NOFOLLOW);
                }
            }
        });
        return bytes[0];
    }
}
