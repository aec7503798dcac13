package dev.crucible.image;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.UUID;

/** The file operations of the store: directories of a fixed mode, atomic writes, trees removed without following links. */
final class StoreFiles {
    static final Set<PosixFilePermission> DIR_OPEN = PosixFilePermissions.fromString("rwxr-xr-x");
    static final Set<PosixFilePermission> DIR_PRIVATE = PosixFilePermissions.fromString("rwx------");
    static final Set<PosixFilePermission> FILE_READABLE = PosixFilePermissions.fromString("rw-r--r--");
    private static final Set<PosixFilePermission> OWNER_ALL = DIR_PRIVATE;

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

    /** Flushes a directory's entries (a rename into it) to disk. */
    static void syncDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    /**
     * Deletes a tree without following symbolic links (a link is removed, never its target); directories a layer made
     * unwritable are opened up first. Returns the bytes of the regular files it removed; a missing tree is 0.
     */
    static long deleteTree(Path top) throws IOException {
        if (!Files.exists(top, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        long[] bytes = {0};
        Files.walkFileTree(top, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                if (!Files.isWritable(dir) || !Files.isExecutable(dir)) {
                    Files.setPosixFilePermissions(dir, OWNER_ALL);
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                if (attrs.isRegularFile()) {
                    bytes[0] += attrs.size();
                }
                deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException failure) throws IOException {
                if (failure != null) {
                    throw failure;
                }
                deleteIfExists(dir);
                return FileVisitResult.CONTINUE;
            }
        });
        return bytes[0];
    }

    /** {@link #deleteTree} for a clean-up after a failure: a further failure is added to {@code cause}. */
    static void deleteTreeAfter(Path top, Throwable cause) {
        try {
            deleteTree(top);
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    private static void deleteIfExists(Path path) throws IOException {
        try {
            Files.delete(path);
        } catch (NoSuchFileException gone) {
            // removed meanwhile: what we wanted
        }
    }
}
