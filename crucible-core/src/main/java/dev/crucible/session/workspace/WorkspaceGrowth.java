package dev.crucible.session.workspace;

import dev.crucible.os.Extents;
import dev.crucible.os.Linux;
import dev.crucible.util.Once;
import java.io.File;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A workspace that grows in whole allocated steps up to its quota, without resizing its file system (that needs
 * {@code CAP_SYS_RESOURCE}, which a server in a container lacks). The ext4 is made at the quota, on an image allocated
 * whole; a <em>balloon</em> file beside the workspace (in the image, never in the sandbox's view) then takes all its
 * free room but {@link #INITIAL} as unwritten extents (no data written), and the image's blocks under the balloon
 * are given back to the host (holes punched). So every block the file system can hand a writer is allocated in the
 * image: a write that does not fit gets {@code ENOSPC} from ext4 at write time, and no acknowledged write can ever
 * land on a hole. The loop device is first told to punch nothing itself ({@link DiskCalls#neverUnmap}): ext4's own
 * zeroing of blocks would otherwise become holes in the image under a tenant's file; where that cannot be set, the
 * workspace keeps its quota allocated whole and never grows.
 *
 * <p>To grow, the image's blocks under the balloon's last extents are allocated first ({@code fallocate}: refused
 * with {@code ENOSPC} when the host's disk has no room, then nothing changes), then the balloon is cut short, which
 * frees exactly those blocks to the workspace. The balloon never grows again; at zero the workspace has its quota.
 * One daemon thread looks at every mounted workspace's free room (statfs, which never waits for a journal) {@value
 * #PERIOD_MS} ms apart; a workspace short of room ({@link #low}) is grown on a thread of a pool, one grow per
 * workspace at a time, so a grow that waits (a heavy writer's journal commit) stalls only its own workspace, and one
 * that fails (any {@link Throwable}) is logged and counted ({@link #failures}) and tried again at the next look. A
 * grow is by the workspace's grown size or {@link #STEP}, whichever is more, when {@link WorkspaceDisk.Growth} admits
 * the bytes for the workspace's owner. Server-side copies ({@link WorkspaceCopy}) ask for their room first.
 */
final class WorkspaceGrowth {
    /**
     * The free room a new workspace has (beside ext4's own reserve for its metadata, allocated too): 16 MiB, or the
     * system property {@code crucible.workspace.initial-mb}. Smaller costs less disk per idle session; a writer faster
     * than the grower meets {@code ENOSPC} sooner.
     */
    static final long INITIAL = Long.getLong("crucible.workspace.initial-mb", 16) << 20;
    /** A workspace with less than this free is grown (or a quarter of what it has grown to, if more). */
    static final long LOW = INITIAL / 2;
    /** The least a grow adds. */
    static final long STEP = 64L << 20;
    static final long PERIOD_MS = 200;
    /** The balloon's name in the mounted image (beside {@code w}). */
    static final String BALLOON = "balloon";
    private static final long ALIGN = 64L << 10;
    private static final int PUNCH_HOLE = 2;
    private static final System.Logger LOG = System.getLogger(WorkspaceGrowth.class.getName());

    /**
     * A mounted workspace that can grow: its session's directory, its image, where the image is mounted, and who admits
     * its grows; what its image held allocated when it was mounted ({@code floor}) and holds now ({@code allocated}).
     */
    static final class Mounted {
        final Path sessionDir;
        final Path image;
        final Path mount;
        final AtomicReference<WorkspaceDisk.Growth> admission;
        final long floor;
        final AtomicLong allocated;
        /** What the balloon still holds: {@code allocated} plus this is the most the image can come to hold. */
        final AtomicLong balloon;
        /** The file system's size (statfs: the quota less ext4's own); less the balloon, what it has grown to. */
        final long space;
        final AtomicBoolean busy = new AtomicBoolean();

        Mounted(Path sessionDir, Path image, Path mount, AtomicReference<WorkspaceDisk.Growth> admission)
                throws IOException {
            this.sessionDir = sessionDir;
            this.image = image;
            this.mount = mount;
            this.admission = admission;
            this.floor = Extents.allocated(image);
            this.allocated = new AtomicLong(floor);
            this.balloon = new AtomicLong(held(mount));
            this.space = new File(mount.toString()).getTotalSpace();
        }

        WorkspaceDisk.Allocation allocation() {
            long now = allocated.get();
            return new WorkspaceDisk.Allocation(floor, now, now + balloon.get());
        }
    }

    /** Every mounted growing workspace, by its workspace directory (absolute). */
    private static final Map<Path, Mounted> MOUNTED = new ConcurrentHashMap<>();
    private static final AtomicLong FAILURES = new AtomicLong();
    private static final ExecutorService GROWERS = Executors.newCachedThreadPool(Thread.ofPlatform()
            .name("crucible-workspace-grow-", 0).daemon(true).factory());
    private static final Once<Thread> LOOKER = new Once<>(() -> Thread.ofPlatform().name("crucible-workspace-growth")
            .daemon(true).start(WorkspaceGrowth::loop));

    private WorkspaceGrowth() {}

    /**
     * Gives the balloon in {@code mount} all the file system's free room but {@code keep}, then punches the image's
     * blocks under it. Called on a new image allocated whole, before anything else is written to it, once its loop
     * device punches nothing itself.
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

    /** Watches the workspace at {@code workspace} from now on, if it has a balloon (else it has its quota whole). */
    static void watch(Path workspace, Mounted mounted) {
        if (Files.isRegularFile(mounted.mount.resolve(BALLOON))) {
            MOUNTED.put(workspace.toAbsolutePath().normalize(), mounted);
            LOOKER.get();
        }
    }

    /** Stops watching {@code workspace} (unmounted, or gone). */
    static void forget(Path workspace) {
        MOUNTED.remove(workspace.toAbsolutePath().normalize());
    }

    /** What the growing workspace at {@code workspace} holds, or null when it does not grow (or is not mounted). */
    static WorkspaceDisk.Allocation allocation(Path workspace) {
        Mounted m = MOUNTED.get(workspace.toAbsolutePath().normalize());
        return m == null ? null : m.allocation();
    }

    /** The grows that failed other than for want of room, since start (each logged). */
    static long failures() {
        return FAILURES.get();
    }

    /**
     * Grows the growing workspace holding {@code target} (if any) until it has {@code bytes} free beside {@link #low},
     * as far as its quota, its owner's share and the host's room allow; the caller's write then fits or gets
     * {@code ENOSPC}.
     */
    static void roomFor(Path target, long bytes) {
        Mounted m = holding(target);
        if (m != null) {
            grow(m, bytes);
        }
    }

    /**
     * As {@link #roomFor}, but never waiting: when a grow of that workspace is under way (it may wait on a heavy
     * writer's journal commit), nothing is done and that grow gives it room.
     */
    static void roomNow(Path target, long bytes) {
        Mounted m = holding(target);
        if (m != null && m.busy.compareAndSet(false, true)) {
            try {
                grow(m, bytes);
            } finally {
                m.busy.set(false);
            }
        }
    }

    private static Mounted holding(Path target) {
        for (Path p = target.toAbsolutePath().normalize(); p != null; p = p.getParent()) {
            Mounted m = MOUNTED.get(p);
            if (m != null) {
                return m;
            }
        }
        return null;
    }

    /** How many bytes the balloon in {@code mount} still holds (what the workspace can still grow by). */
    static long held(Path mount) throws IOException {
        Path balloon = mount.resolve(BALLOON);
        return Files.isRegularFile(balloon) ? Files.size(balloon) : 0;
    }

    /** Below this much free room {@code m} is grown: {@link #LOW}, or a quarter of what it has grown to, if more. */
    static long low(Mounted m) {
        return Math.max(LOW, (m.space - m.balloon.get()) / 4);
    }

    private static void loop() {
        while (true) {
            for (Mounted m : MOUNTED.values()) {
                try {
                    look(m);
                } catch (Throwable t) { // this workspace's look only: the others are looked at all the same
                    failed(m, t);
                }
            }
            LockSupport.parkNanos(PERIOD_MS * 1_000_000);
        }
    }

    /** One look at {@code m}: short of room, a grow handed to the pool unless one is under way for it. */
    private static void look(Mounted m) {
        if (m.busy.get() || new File(m.mount.toString()).getUsableSpace() >= low(m)) {
            return;
        }
        if (m.busy.compareAndSet(false, true)) {
            GROWERS.execute(() -> {
                try {
                    grow(m, 0);
                } finally {
                    m.busy.set(false);
                }
            });
        }
    }

    private static void failed(Mounted m, Throwable t) {
        FAILURES.incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "cannot grow the workspace in " + m.mount + " now (tried again): " + t, t);
    }

    /** One grow of {@code m} when it has less than {@code wanted} + {@link #low} free; never throws. */
    static void grow(Mounted m, long wanted) {
        synchronized (m) {
            try {
                File fs = new File(m.mount.toString());
                long free = fs.getUsableSpace(); // ext4 keeps its reserve besides, for its own metadata
                long low = low(m);
                if (free >= wanted + low) {
                    return;
                }
                long held = held(m.mount);
                if (held == 0) {
                    return; // at its quota
                }
                long least = Math.min(held, align(wanted + low - free));
                long step = Math.min(held, align(Math.max(Math.max(STEP, fs.getTotalSpace() - held), least)));
                WorkspaceDisk.Growth admits = m.admission.get();
                if (!admits.take(m.sessionDir, step)) {
                    step = least; // what it lacks only: its owner's share or the disk may have that much left
                    if (step == 0 || !admits.take(m.sessionDir, step)) {
                        return; // no room for it now: ENOSPC inside at this size, asked again at the next look
                    }
                }
                try {
                    deflate(m, held, step);
                } finally {
                    admits.done(m.sessionDir, step);
                }
            } catch (Linux.ErrnoException e) {
                if (e.errno() != Linux.ENOSPC) {
                    failed(m, e);
                } // else the host's disk is full: the same as a grow not admitted
            } catch (Throwable t) {
                failed(m, t);
            }
        }
    }

    private static long align(long bytes) {
        return (Math.max(0, bytes) + ALIGN - 1) / ALIGN * ALIGN;
    }

    /** The image's blocks under the balloon's last {@code step} bytes allocated, then the balloon cut by them. */
    private static void deflate(Mounted m, long held, long step) throws IOException {
        Path balloon = m.mount.resolve(BALLOON);
        long from = held - step;
        for (Extents.Extent e : Extents.of(balloon, from, step)) {
            Linux.fallocate(m.image, 0, e.physical(), e.length()); // ENOSPC: nothing freed yet
        }
        m.allocated.addAndGet(step); // counted before it is admitted done: never missing from the owner's figure
        try (FileChannel file = FileChannel.open(balloon, StandardOpenOption.WRITE)) {
            file.truncate(from);
            file.force(true);
        }
        m.balloon.set(from);
    }
}
