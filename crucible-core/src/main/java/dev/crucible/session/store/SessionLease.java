package dev.crucible.session.store;

import dev.crucible.os.Linux;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Which replica holds a session, when replicas share a data directory: an exclusive {@code flock} on
 * {@code sessions/<id>/owner}, held by the replica that has the session loaded for as long as it does, and the file's
 * content, that replica's name. The kernel drops the lock when its process dies ({@code kill -9} included), so the
 * next replica that takes it may adopt the session; the name tells every other replica where to send requests
 * meanwhile. {@code flock} belongs to the open file description, so reading the name through another descriptor never
 * drops it (a POSIX record lock would be dropped by any close of the file in the process).
 */
public final class SessionLease implements AutoCloseable {
    public static final String FILE = "owner";

    private final int fd;
    private final AtomicBoolean closed = new AtomicBoolean();

    private SessionLease(int fd) {
        this.fd = fd;
    }

    /**
     * Takes the session in {@code dir} for {@code replica} when no live replica (this process included) holds it,
     * and writes the name.
     *
     * @return the lease, or empty when another holder has it
     */
    public static Optional<SessionLease> tryTake(Path dir, String replica) throws IOException {
        int fd = Linux.openat2(-100, dir.resolve(FILE).toString(),
                Linux.O_RDWR | Linux.O_CREAT | Linux.O_CLOEXEC | Linux.O_NOFOLLOW, 0600, 0);
        boolean taken = false;
        try {
            taken = Linux.tryLockExclusive(fd);
            if (taken) {
                // the name goes in place by rename: a reader sees the old name or the new, never half of one (the
                // lock stays on the file this descriptor opened, kept apart from the name)
                Path name = dir.resolve(FILE + ".tmp");
                Files.writeString(name, replica, StandardCharsets.UTF_8);
                Files.move(name, dir.resolve(FILE + ".name"), StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
                return Optional.of(new SessionLease(fd));
            }
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            taken = false;
            throw e;
        } finally {
            if (!taken) {
                Linux.close(fd);
            }
        }
    }

    /** The name of the replica that last took {@code dir} (its holder, or the last one if it died), or empty. */
    public static Optional<String> holder(Path dir) {
        try {
            String name = Files.readString(dir.resolve(FILE + ".name"), StandardCharsets.UTF_8).strip();
            return name.isEmpty() ? Optional.empty() : Optional.of(name);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** Lets the session go: another replica may take it. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Linux.close(fd);
        }
    }
}
