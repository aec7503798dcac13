package dev.crucible.image.store;

import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Shared and exclusive locks on a lock file that hold between the threads of this JVM and against other processes
 * ({@code crucible serve} and the {@code crucible image} CLI on one store). The file lock belongs to the process and
 * closing any channel on the file drops it, so this JVM keeps at most one channel per lock file, opened by the first
 * holder and closed by the last; threads of this JVM count on that channel.
 */
final class FileLocks {
    private static final ConcurrentHashMap<Path, Slot> SLOTS = new ConcurrentHashMap<>();

    /** The holders of one lock file in this JVM; guarded by its own monitor. */
    private static final class Slot {
        int shared;
        boolean exclusive;
        FileChannel channel;
        FileLock lock;
    }

    private FileLocks() {}

    /** Takes the lock shared (creating the file), waiting for an exclusive holder here or in another process. */
    static Closeable shared(Path file) throws IOException {
        Slot slot = slot(file);
        synchronized (slot) {
            while (slot.exclusive) {
                await(slot);
            }
            if (slot.shared == 0) {
                acquire(slot, file, true, true);
            }
            slot.shared++;
        }
        return releaser(slot);
    }

    /** Takes the lock exclusively (creating the file), waiting for every other holder. */
    static Closeable exclusive(Path file) throws IOException {
        Slot slot = slot(file);
        synchronized (slot) {
            while (slot.exclusive || slot.shared > 0) {
                await(slot);
            }
            acquire(slot, file, false, true);
            slot.exclusive = true;
        }
        return releaser(slot);
    }

    /** Takes the lock exclusively if nobody holds it, here or elsewhere; null if someone does. */
    static Closeable tryExclusive(Path file) throws IOException {
        Slot slot = slot(file);
        synchronized (slot) {
            if (slot.exclusive || slot.shared > 0 || !acquire(slot, file, false, false)) {
                return null;
            }
            slot.exclusive = true;
        }
        return releaser(slot);
    }

    private static Slot slot(Path file) {
        return SLOTS.computeIfAbsent(file.toAbsolutePath().normalize(), f -> new Slot());
    }

    private static boolean acquire(Slot slot, Path file, boolean shared, boolean wait) throws IOException {
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        try {
            FileLock lock = wait ? channel.lock(0, Long.MAX_VALUE, shared) : channel.tryLock(0, Long.MAX_VALUE, shared);
            if (lock == null) {
                channel.close();
                return false;
            }
            slot.channel = channel;
            slot.lock = lock;
            return true;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static Closeable releaser(Slot slot) {
        AtomicBoolean open = new AtomicBoolean(true);
        return () -> {
            if (open.getAndSet(false)) {
                release(slot);
            }
        };
    }

    private static void release(Slot slot) throws IOException {
        synchronized (slot) {
            if (slot.exclusive) {
                slot.exclusive = false;
            } else {
                slot.shared--;
            }
            try {
                if (slot.shared == 0 && slot.channel != null) {
                    slot.channel.close(); // releases the file lock
                }
            } finally {
                if (slot.shared == 0) {
                    slot.channel = null;
                    slot.lock = null;
                }
                slot.notifyAll();
            }
        }
    }

    private static void await(Slot slot) throws InterruptedIOException {
        try {
            slot.wait();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for an image store lock");
        }
    }
}
