package dev.crucible.session.budget;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.store.SessionStore;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * The room the data directory's file system has for new workspaces and snapshots: what is free on it now (read at
 * each admission: images pulled, other writers and other replicas all count), less what is promised to workspaces
 * admitted but not made yet, less a headroom kept free for what sessions write beside their workspaces (records, cell
 * logs, leases), so that admitting sessions never fills the disk those writes need. Only {@link SessionNumbers} asks,
 * under its lock.
 *
 * @param usable the bytes free now to an unprivileged writer (-1: unknown, nothing refused)
 * @param headroom the bytes kept free
 * @param where the file system, as a refusal names it
 */
public record DiskRoom(LongSupplier usable, long headroom, String where) {
    /** The headroom: this much, or {@value #HEADROOM_SHARE} of a file system too small for it. */
    public static final long MAX_HEADROOM = 1L << 30;

    static final double HEADROOM_SHARE = 0.05;

    /**
     * The room of the file system holding {@code store}'s sessions, read once its disk probe is done (the probe's own
     * image, made and removed there at start, is no room to promise).
     */
    public static DiskRoom of(SessionStore store) throws IOException {
        Path dir = store.root();
        FileStore fs = Files.getFileStore(dir);
        long headroom = Math.min(MAX_HEADROOM, (long) (fs.getTotalSpace() * HEADROOM_SHARE));
        return new DiskRoom(() -> {
            try {
                store.awaitProbe();
                return fs.getUsableSpace(); // statvfs of the directory each time: no mount table read
            } catch (IOException e) {
                return -1;
            }
        }, headroom, fs + ", which holds " + dir);
    }

    /**
     * Why {@code wanted} more bytes cannot be promised beside {@code pending} promised already; null if they can.
     *
     * @param what what the bytes are for and what to do, ending the refusal's message
     */
    RequestException refusal(long pending, long wanted, String what) {
        long free = usable.getAsLong();
        if (free < 0 || pending + wanted + headroom <= free) {
            return null;
        }
        return new RequestException(ErrorCode.DATA_DIR_FULL, "the data directory's file system has no room: " + where
                + " has " + mib(free) + " MiB free, " + (pending > 0 ? mib(pending) + " MiB of it promised to sessions"
                + " being made, " : "") + mib(headroom) + " MiB kept free for records and logs, and " + what);
    }

    private static long mib(long bytes) {
        return bytes >> 20;
    }
}
