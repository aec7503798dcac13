package dev.crucible.sandbox.bwrap;

import dev.crucible.sandbox.SandboxUnavailableException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

/**
 * A host-wide lease on a block of sandbox uids: {@link #BLOCK} uids from a base, held by a lock on
 * {@code <dir>/uids-<base>.lock} for as long as this process keeps the lease (the kernel drops the lock when the process
 * dies, {@code kill -9} included). Two Crucible processes on one host — a server and a {@code crucible eval dataset},
 * or two test JVMs — therefore never run sandboxes as the same uid: the second one takes the next free block and says
 * which. Within one JVM a second launcher sees the first one's lock as taken too.
 *
 * <p>Thread-safe: immutable once acquired; {@link #close()} is idempotent. Public for {@link #BLOCK} alone (the zygote's
 * tests find its uid at the block's end); leases are taken by {@link Slots}.
 */
public final class UidLease implements AutoCloseable {
    /**
     * Uids per block: slots from the base, sessions from base + 1000 ({@link Slots#SESSION_UID_OFFSET}), zygotes from
     * the end down.
     */
    public static final int BLOCK = 4000;
    /** How many blocks are tried above the first one before giving up. */
    static final int BLOCKS = 16;
    /** Where the lock files live: per boot, root only. */
    static final Path DIRECTORY = Path.of("/run/crucible");

    private final int base;
    private final FileChannel channel;
    private final FileLock lock;
    private final List<String> skipped;

    private UidLease(int base, FileChannel channel, FileLock lock, List<String> skipped) {
        this.base = base;
        this.channel = channel;
        this.lock = lock;
        this.skipped = skipped;
    }

    /**
     * Takes the first free block at {@code first}, {@code first + BLOCK}, … (up to {@link #BLOCKS} blocks).
     *
     * @throws SandboxUnavailableException when every block is leased, naming their holders
     */
    static UidLease acquire(Path directory, int first) {
        List<String> skipped = new ArrayList<>();
        try {
            Files.createDirectories(directory);
            Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxr-xr-x"));
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot create " + directory + " for the host-wide uid lease: "
                    + e.getMessage(), e);
        }
        for (int i = 0; i < BLOCKS; i++) {
            int base = first + i * BLOCK;
            Path file = directory.resolve("uids-" + base + ".lock");
            FileChannel channel = null;
            try {
                channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                FileLock lock;
                try {
                    lock = channel.tryLock();
                } catch (OverlappingFileLockException e) {
                    lock = null; // this JVM holds it already (another launcher)
                }
                if (lock == null) {
                    skipped.add(base + ".." + (base + BLOCK - 1) + " (held by " + holder(channel) + ")");
                    channel.close();
                    continue;
                }
                channel.truncate(0);
                channel.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)),
                        0);
                return new UidLease(base, channel, lock, List.copyOf(skipped));
            } catch (IOException e) {
                closeQuietly(channel);
                throw new SandboxUnavailableException("cannot lease sandbox uids through " + file + ": "
                        + e.getMessage(), e);
            }
        }
        throw new SandboxUnavailableException("every block of sandbox uids from " + first + " is leased by another"
                + " Crucible process: " + String.join(", ", skipped) + "; stop one, or start this one with"
                + " CRUCIBLE_SLOT_UID_BASE set to a free range");
    }

    private static String holder(FileChannel channel) {
        try {
            ByteBuffer buffer = ByteBuffer.allocate(32);
            channel.read(buffer, 0);
            String pid = new String(buffer.array(), 0, buffer.position(), StandardCharsets.US_ASCII).strip();
            return pid.isEmpty() ? "another process" : "pid " + pid;
        } catch (IOException e) {
            return "another process";
        }
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing held
            }
        }
    }

    /** The first uid of the block. */
    int base() {
        return base;
    }

    /** The blocks found taken before this one, with their holders (empty when the first was free). */
    List<String> skipped() {
        return skipped;
    }

    @Override
    public void close() {
        try {
            if (lock.isValid()) {
                lock.release();
            }
        } catch (IOException ignored) {
            // the channel's close drops it anyway
        }
        closeQuietly(channel);
    }
}
