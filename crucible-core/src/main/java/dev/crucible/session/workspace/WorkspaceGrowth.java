package dev.crucible.session.workspace;

import dev.crucible.os.Extents;
import dev.crucible.os.Linux;
import java.io.File;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A workspace that grows in whole allocated steps up to its quota, without resizing its file system (that needs
 * {@code CAP_SYS_RESOURCE}, which a server in a container lacks). The ext4 is made at the quota, on an image allocated
 * whole; a <em>balloon</em> file beside the workspace (in the image, never in the sandbox's view) then takes all its
 * free room but {@link #INITIAL} as unwritten extents (no data written), and the image's blocks under the balloon
 * are given back to the host (holes punched). So every block the file system can hand a writer is allocated in the
 * image: a write that does not fit gets {@code ENOSPC} from ext4 at write time, and no acknowledged write can ever
 * land on a hole.
 *
 * <p>To grow, the image's blocks under the balloon's last extents are allocated first ({@code fallocate}: refused
 * with {@code ENOSPC} when the host's disk has no room, then nothing changes), then the balloon is cut short, which
 * frees exactly those blocks to the workspace. The balloon never grows again; at zero the workspace has its quota.
 * One daemon thread looks at every mounted workspace's free room (statfs) {@value #PERIOD_MS} ms apart and grows
 * one that has less than {@link #LOW} free, by its size or {@link #STEP}, whichever is more, when {@link
 * WorkspaceDisk.Growth} admits the bytes. Server-side copies ({@link WorkspaceCopy}) ask for their room first.
 */
final class WorkspaceGrowth {
    /**
     * The free room a new workspace has (beside ext4's own reserve for its metadata, allocated too): 64 MiB, or the
     * system property {@code crucible.workspace.initial-mb}. Smaller costs less disk per idle session, and a writer
     * faster than the grower meets {@code ENOSPC} sooner.
     */
    static final long INITIAL = Long.getLong("crucible.workspace.initial-mb", 64) << 20;
    /** A workspace with less than this free is grown. */
    static final long LOW = INITIAL / 2;
    /** The least a grow adds. */
    static final long STEP = 64L << 20;
    static final long PERIOD_MS = 250;
    /** The balloon's name in the mounted image (beside {@code w}). */
    static final String BALLOON = "balloon";
    private static final long ALIGN = 64L << 10;
    private static final System.Logger LOG = System.getLogger(WorkspaceGrowth.class.getName());

    /** A mounted workspace that can grow: its image, where the image is mounted, and who admits its grows. */
    record Mounted(Path image, Path mount, WorkspaceDisk.Growth admission) {}

    /** Every mounted growing workspace, by its workspace directory (absolute). */
    private static final Map<Path, Mounted> MOUNTED = new ConcurrentHashMap<>();
    private static final dev.crucible.util.Once<Thread> THREAD = new dev.crucible.util.Once<>(() -> {
        Thread t = new Thread(WorkspaceGrowth::loop, "crucible-workspace-growth");
        t.setDaemon(true);
        t.start();
        return t;
    });

    private WorkspaceGrowth() {}

    /**
     * Gives the balloon in {@code mount} all the file system's free room but {@code keep}, then punches the image's
     * blocks under it. Called on a new image allocated whole, before anything else is written to it.
     */
    static void inflate(Path image, Path mount, long keep) throws IOException {
        Path balloon = mount.resolve(BALLOON);
        Files.createFile(balloon, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        long size = (new File(mount.toString()).getUsableSpace() - keep) / ALIGN * ALIGN;
        if (size <= 0) {
            return;
        }
        Linux.fallocate(balloon, 0, 0, size);
        try (FileChannel file = FileChannel.open(balloon, StandardOpenOption.WRITE)) {
            file.force(true); // its extents on the disk before the image's blocks under them go
        }
        for (Extents.Extent e : Extents.of(balloon, 0, size)) {
            Linux.fallocate(image, PUNCH_HOLE | Linux.FALLOC_FL_KEEP_SIZE, e.physical(), e.length());
        }
    }

    private static final int PUNCH_HOLE = 2;

    /** Watches the workspace at {@code workspace} (its image mounted at {@code mount}) from now on. */
    static void watch(Path workspace, Mounted mounted) {
        if (Files.isRegularFile(mounted.mount().resolve(BALLOON))) {
            MOUNTED.put(workspace.toAbsolutePath().normalize(), mounted);
            THREAD.get();
        }
    }

    /** Stops watching {@code workspace} (unmounted, or gone). */
    static void forget(Path workspace) {
        MOUNTED.remove(workspace.toAbsolutePath().normalize());
    }

    /**
     * Grows the growing workspace holding {@code target} (if any) until it has {@code bytes} free beside {@link #LOW},
     * as far as its quota and the host's room allow; the caller's write then fits or gets {@code ENOSPC}.
     */
    static void roomFor(Path target, long bytes) {
        for (Path p = target.toAbsolutePath().normalize(); p != null; p = p.getParent()) {
            Mounted m = MOUNTED.get(p);
            if (m != null) {
                grow(m, bytes);
                return;
            }
        }
    }

    /** How many bytes the balloon in {@code mount} still holds (what the workspace can still grow by). */
    static long held(Path mount) throws IOException {
        Path balloon = mount.resolve(BALLOON);
        return Files.isRegularFile(balloon) ? Files.size(balloon) : 0;
    }

    private static void loop() {
        while (true) {
            for (Mounted m : MOUNTED.values()) {
                grow(m, 0);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(PERIOD_MS * 1_000_000);
        }
    }

    /** One look at {@code m}: grown when it has less than {@code wanted} + {@link #LOW} free. */
    static void grow(Mounted m, long wanted) {
        synchronized (m) {
            try {
                File fs = new File(m.mount().toString());
                long free = fs.getUsableSpace(); // ext4 keeps 16 MiB besides, for its own metadata
                if (free >= wanted + LOW) {
                    return;
                }
                long held = held(m.mount());
                if (held == 0) {
                    return; // at its quota
                }
                long step = Math.max(Math.max(STEP, fs.getTotalSpace() - held), wanted + LOW - free);
                step = Math.min(held, (step + ALIGN - 1) / ALIGN * ALIGN);
                if (!m.admission().take(step)) {
                    return; // no room on the host: ENOSPC inside at this size, tried again on the next look
                }
                try {
                    deflate(m, held, step);
                } finally {
                    m.admission().done(step);
                }
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "cannot grow " + m.mount() + " now: " + e.getMessage());
            }
        }
    }

    /** The image's blocks under the balloon's last {@code step} bytes allocated, then the balloon cut by them. */
    private static void deflate(Mounted m, long held, long step) throws IOException {
        Path balloon = m.mount().resolve(BALLOON);
        long from = held - step;
        for (Extents.Extent e : Extents.of(balloon, from, step)) {
            Linux.fallocate(m.image(), 0, e.physical(), e.length()); // ENOSPC: nothing freed yet
        }
        try (FileChannel file = FileChannel.open(balloon, StandardOpenOption.WRITE)) {
            file.truncate(from);
            file.force(true);
        }
    }
}
