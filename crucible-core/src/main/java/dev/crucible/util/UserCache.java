package dev.crucible.util;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.Set;

/**
 * Files a Crucible process keeps for the next one of the same user, so that a CLI command does not redo what does not
 * change between runs: {@code $XDG_CACHE_HOME/crucible} (else {@code ~/.cache/crucible}). Everything in it may be
 * deleted at any time; a missing or unusable cache costs time, never correctness.
 *
 * <p>What is read back is trusted only as far as this user is: a file is used only when it and its directory are
 * owned by the uid of this process, are not symbolic links and cannot be written by group or others. So a cache
 * found in another user's home (a {@code sudo} that kept {@code HOME}) is neither read nor written. Writes go to a
 * temporary file renamed over the old one: a concurrent reader sees the old content or the new, never a part.
 */
public final class UserCache {
    private static final Set<PosixFilePermission> WRITABLE_BY_OTHERS =
            Set.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE);

    private final Path directory;

    public UserCache(Path directory) {
        this.directory = directory;
    }

    /** The user's cache: {@code $XDG_CACHE_HOME/crucible}, else {@code ~/.cache/crucible}. */
    public static UserCache standard() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && xdg.startsWith("/") ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return new UserCache(base.resolve("crucible"));
    }

    /** The content of {@code name} if it is there, trusted (see the class) and at most {@code maxBytes} long. */
    public Optional<byte[]> read(String name, int maxBytes) {
        try {
            Path file = directory.resolve(name);
            if (!trusted(directory, true) || !trusted(file, false) || Files.size(file) > maxBytes) {
                return Optional.empty();
            }
            return Optional.of(Files.readAllBytes(file));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Replaces {@code name} by {@code content}, mode 0600 in a 0700 directory; a failure is ignored (no cache). */
    public void write(String name, byte[] content) {
        try {
            if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)) {
                Files.createDirectories(directory, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")));
            }
            if (!trusted(directory, true)) {
                return;
            }
            Path temp = Files.createTempFile(directory, name, ".tmp"); // mode 0600
            try {
                Files.write(temp, content);
                Files.move(temp, directory.resolve(name), StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } finally {
                Files.deleteIfExists(temp);
            }
        } catch (IOException | RuntimeException e) {
            // no cache: the next process computes again
        }
    }

    private static boolean trusted(Path path, boolean directory) throws IOException {
        PosixFileAttributes a = Files.getFileAttributeView(path, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                .readAttributes();
        boolean kind = directory ? a.isDirectory() : a.isRegularFile();
        int owner = (Integer) Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        return kind && owner == ownUid() && a.permissions().stream().noneMatch(WRITABLE_BY_OTHERS::contains);
    }

    private static int ownUid() throws IOException {
        return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    }
}
