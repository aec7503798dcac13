package dev.crucible.session.store;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A paused session's saved sandbox ({@code <session dir>/memory}, what {@code runsc checkpoint} wrote): the server's
 * for good once written (its files owned by the server's uid, read-only to others), in a directory the server's alone
 * while the session is paused, so nothing running as the session's uid can change what the next restore reads. For a
 * restore only the directory is handed to the session's uid (runsc reads the files through it), and only when it
 * holds nothing but regular files (a link or a device put there is refused, never followed). So one saved sandbox
 * may be hard-linked into several forks' directories: no fork's restore changes what another reads.
 */
public final class SavedMemory {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private SavedMemory() {}

    /** Takes {@code memory} from the uid that wrote it: the server's, owner-only. */
    public static void lock(Path memory) throws IOException {
        int server = (int) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        for (Path p : files(memory)) {
            Files.setAttribute(p, "unix:uid", server, NOFOLLOW);
            Files.setAttribute(p, "unix:gid", server, NOFOLLOW);
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(Files.isDirectory(p, NOFOLLOW)
                    ? "rwx------" : "rw-r--r--"));
        }
    }

    /**
     * Makes {@code fork} (a directory to be made) hold the same saved sandbox as {@code memory}, by hard links: the
     * files are the server's and read-only, so sharing them shares nothing a fork could change (on another file
     * system, by copies). Returns the bytes the files hold.
     */
    public static long share(Path memory, Path fork) throws IOException {
        List<Path> files = files(memory);
        Files.createDirectory(fork, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        long bytes = 0;
        for (Path p : files.subList(1, files.size())) {
            try {
                Files.createLink(fork.resolve(p.getFileName()), p);
            } catch (FileSystemException crossDevice) { // another file system: a copy, the server's too
                Files.copy(p, fork.resolve(p.getFileName()), LinkOption.NOFOLLOW_LINKS,
                        StandardCopyOption.COPY_ATTRIBUTES);
            }
            bytes += Files.size(p);
        }
        return bytes;
    }

    /**
     * Hands {@code memory} to {@code uid} (the session's now, on this replica) for a restore.
     *
     * @return {@code memory}
     * @throws IOException when it holds anything but regular files, or cannot be handed over
     */
    public static Path unlock(Path memory, int uid) throws IOException {
        files(memory); // checked: regular files only, each the server's (see lock)
        if (uid >= 0) {
            Files.setAttribute(memory, "unix:uid", uid, NOFOLLOW);
        }
        return memory;
    }

    /** Removes {@code memory} and what it holds, never following a link; nothing when it is not there. */
    public static void delete(Path memory) {
        try (var walk = Files.walk(memory)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // not there, or gone meanwhile
        }
    }

    /** {@code memory} and its entries, checked: a directory of regular files, nothing deeper, no link. */
    private static List<Path> files(Path memory) throws IOException {
        if (!Files.isDirectory(memory, NOFOLLOW)) {
            throw new IOException("no saved sandbox at " + memory);
        }
        List<Path> all = new ArrayList<>(List.of(memory));
        try (var entries = Files.list(memory)) {
            for (Path p : entries.toList()) {
                if (!Files.isRegularFile(p, NOFOLLOW)) {
                    throw new IOException("a saved sandbox holds only regular files; " + p.getFileName() + " is not");
                }
                all.add(p);
            }
        }
        return all;
    }
}
