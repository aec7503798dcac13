package dev.crucible;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

/**
 * Temporary directories a test JVM makes outside JUnit's {@code @TempDir} (data dirs handed to servers and child
 * processes, image stores shared by a class), deleted when the JVM exits. A session's workspace image is its whole
 * quota: every run of the suite left gigabytes in /tmp until a machine's disk was full.
 */
public final class TestDirs {

    private static final List<Path> DIRS = new CopyOnWriteArrayList<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> DIRS.forEach(TestDirs::deleteTree), "test-dirs"));
    }

    private TestDirs() {}

    /** A new directory under the temp dir, searchable by others (sessions' uids traverse a data dir), deleted at exit. */
    public static Path create(String prefix) {
        try {
            Path dir = Files.createTempDirectory(prefix);
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            DIRS.add(dir);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Deletes a tree without following links out of it; what cannot be deleted (a mount still busy) stays. */
    public static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // a busy mount point, or a file of a process still running: the temp dir's cleaner has it
                }
            });
        } catch (IOException | UncheckedIOException e) {
            // gone already: nothing to delete
        }
    }
}
