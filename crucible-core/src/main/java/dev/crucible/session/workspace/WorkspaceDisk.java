package dev.crucible.session.workspace;

import dev.crucible.os.Mounts;
import dev.crucible.util.Once;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * What bounds the bytes a session's workspace can hold against writes from <em>inside</em> its sandbox, not only
 * uploads.
 *
 * <p>{@link Loop}: each workspace is its own ext4 file system of its quota in an image file beside it ({@code
 * workspace.img}), loop-mounted {@code nosuid,nodev} at {@code disk} with the workspace ({@code w} in it) bound on
 * the workspace directory. The image holds allocated blocks for all the workspace can write now, and grows in whole
 * allocated steps up to the quota ({@link WorkspaceGrowth}). The kernel answers {@code ENOSPC} when it is full,
 * whoever writes, at write time, so nothing acknowledged is lost. It needs root,
 * loop devices and {@code mkfs.ext4}; a probe at start says whether they work. {@link Unbounded}: the quota holds
 * for uploads only, and start-up says why.
 */
public sealed interface WorkspaceDisk {
    String IMAGE = "workspace.img";
    /** ext4 needs a few MiB for its own structures; a smaller quota gets this much. */
    long MIN_BYTES = 16L * 1024 * 1024;

    /** The quota's bytes per inode of a workspace's file system: 32,768 files and directories per GiB. */
    long INODE_BYTES = 32L << 10;

    /** Where a session with a root of its own has its image mounted: {@code w} (its workspace) and {@code r} in it. */
    String DISK = "disk";

    /**
     * Creates {@code sessionDir/workspace} with room for a root of its own besides it on the same disk: the image
     * mounted at {@code sessionDir/disk}, holding {@code w} (bound at {@code sessionDir/workspace}) and {@code r}
     * (the server's, for the root's layers), so the root counts against the same quota and goes with the image.
     *
     * @param allocated run once the disk's room for it is taken (before the slower work of making its file system)
     * @throws IOException when this disk cannot (no loop mounts: a root needs a bounded disk)
     */
    default void createRooted(Path sessionDir, long bytes, Runnable allocated) throws IOException {
        throw new IOException("a session's own root needs loop-mounted workspaces (root and /dev/loop-control)");
    }

    /**
     * Whether the session in {@code sessionDir} was made with room for a root ({@link #createRooted}): its disk and
     * the launcher's mount points ({@code mnt}) beside it.
     */
    static boolean rooted(Path sessionDir) {
        return layered(sessionDir) && Files.isDirectory(sessionDir.resolve("mnt"), LinkOption.NOFOLLOW_LINKS);
    }

    /** Whether the image of the session in {@code sessionDir} is mounted at {@code disk}, its workspace in {@code w}. */
    private static boolean layered(Path sessionDir) {
        return Files.isDirectory(sessionDir.resolve(DISK), LinkOption.NOFOLLOW_LINKS);
    }

    /**
     * Admits the grow of {@code bytes} of the workspace of the session in {@code sessionDir} against the host's disk and
     * its owner's share, under the lock that admits new sessions ({@code take}: false, not grown, its writes get
     * {@code ENOSPC} at its size); {@code done} once the image holds them (or failed to).
     */
    interface Growth {
        Growth ANY = new Growth() {
            @Override
            public boolean take(Path sessionDir, long bytes) {
                return true;
            }

            @Override
            public void done(Path sessionDir, long bytes) {}
        };

        boolean take(Path sessionDir, long bytes);

        void done(Path sessionDir, long bytes);
    }

    /**
     * What a growing workspace's image holds on the host: {@code floor} when it was mounted, {@code allocated} now, and
     * {@code most} when grown to its quota (about the image's size).
     */
    record Allocation(long floor, long allocated, long most) {}

    /** What the workspace of the session in {@code sessionDir} holds, or null when it does not grow (its quota whole). */
    default Allocation allocation(Path sessionDir) {
        return null;
    }

    /**
     * Grows the workspace of the session in {@code sessionDir}, if it grows, to a step of free room before its session
     * runs something (a writer faster than the growth's looks meets {@code ENOSPC} only past that); as far as its
     * owner's share and the disk allow.
     */
    default void readyToWrite(Path sessionDir) {}

    /** Has {@code growth} admit this disk's workspaces' grows from now on. */
    default void admitGrowths(Growth growth) {}

    /**
     * Creates {@code sessionDir/workspace}, bounded to {@code bytes} when this disk can.
     *
     * @param allocated run once the disk's room for it is taken (before the slower work of making its file system)
     */
    void create(Path sessionDir, long bytes, Runnable allocated) throws IOException;

    /** Makes a kept session's workspace ready again (mounts its image if a restart unmounted it). */
    void attach(Path sessionDir) throws IOException;

    /** Unmounts the workspace if it is mounted (its files stay in the image); safe to call again. */
    void detach(Path sessionDir);

    /** Whether writes from inside the sandbox are bounded by the kernel. */
    boolean enforced();

    String describe();

    /**
     * As {@link #detect}, probed on a thread of its own at a lower priority (off the path to a server's first answer);
     * each call waits for the probe, then {@code found} hears what it found.
     */
    static WorkspaceDisk detectWhenIdle(Path dataDir, boolean root, Consumer<WorkspaceDisk> found) {
        var grows = new AtomicReference<>(Growth.ANY);
        Once<WorkspaceDisk> probed = new Once<>(() -> {
            WorkspaceDisk disk = detect(dataDir, root, grows);
            found.accept(disk);
            return disk;
        });
        probed.startWhenIdle("crucible-disk-probe");
        return new Probed(probed, grows);
    }

    /** A disk still being probed: every call waits for the probe, then goes to what it found. */
    record Probed(Once<WorkspaceDisk> disk, AtomicReference<Growth> grows)
            implements WorkspaceDisk {
        @Override
        public void createRooted(Path sessionDir, long bytes, Runnable allocated) throws IOException {
            disk.get().createRooted(sessionDir, bytes, allocated);
        }

        @Override
        public void create(Path sessionDir, long bytes, Runnable allocated) throws IOException {
            disk.get().create(sessionDir, bytes, allocated);
        }

        @Override
        public void attach(Path sessionDir) throws IOException {
            disk.get().attach(sessionDir);
        }

        @Override
        public void admitGrowths(Growth growth) {
            grows.set(growth); // the disk found shares it: no wait for the probe
        }

        @Override
        public Allocation allocation(Path sessionDir) {
            return disk.get().allocation(sessionDir);
        }

        @Override
        public void readyToWrite(Path sessionDir) {
            disk.get().readyToWrite(sessionDir);
        }

        @Override
        public void detach(Path sessionDir) {
            disk.get().detach(sessionDir);
        }

        @Override
        public boolean enforced() {
            return disk.get().enforced();
        }

        @Override
        public String describe() {
            return disk.get().describe();
        }
    }

    /** The loop-mounted image when this host can, else {@link Unbounded} with the reason. */
    static WorkspaceDisk detect(Path dataDir, boolean root) {
        return detect(dataDir, root, new AtomicReference<>(Growth.ANY));
    }

    private static WorkspaceDisk detect(Path dataDir, boolean root, AtomicReference<Growth>
            grows) {
        Path mkfs = List.of(Path.of("/usr/sbin/mkfs.ext4"), Path.of("/sbin/mkfs.ext4")).stream()
                .filter(Files::isExecutable).findFirst().orElse(null);
        if (mkfs == null) {
            return new Unbounded("no mkfs.ext4 (apt-get install e2fsprogs)");
        }
        if (!root || !Files.exists(Path.of("/dev/loop-control"))) {
            return new Unbounded("loop-mounted workspaces need root and /dev/loop-control");
        }
        Loop loop = new Loop(mkfs, grows);
        Path probe = dataDir.resolve(".disk-probe");
        try {
            loop.detach(probe);
            DiskCalls.removeTree(probe);
            Files.createDirectories(probe);
            loop.create(probe, MIN_BYTES, () -> {});
            return loop;
        } catch (IOException e) {
            if (DataDirFull.is(e)) {
                // no room for a probe is no proof that loop mounts fail: the workspaces kept here are images to mount
                // again, and a new one is refused as data_dir_full until there is room
                System.getLogger(WorkspaceDisk.class.getName()).log(System.Logger.Level.WARNING, "the data directory "
                        + dataDir + " is full: loop-mounted workspaces are assumed to work without a probe");
                return loop;
            }
            return new Unbounded("a loop-mounted workspace could not be made here: " + e.getMessage());
        } finally {
            loop.detach(probe);
            DiskCalls.removeTree(probe);
        }
    }

    /** Each workspace a loop-mounted ext4 image of its quota, allocated as far as it has grown. */
    record Loop(Path mkfs, AtomicReference<Growth> growth) implements WorkspaceDisk {
        @Override
        public void create(Path sessionDir, long bytes, Runnable allocated) throws IOException {
            make(sessionDir, bytes, allocated, false);
        }

        @Override
        public void createRooted(Path sessionDir, long bytes, Runnable allocated) throws IOException {
            make(sessionDir, bytes, allocated, true);
        }

        @Override
        public void admitGrowths(Growth admits) {
            growth.set(admits);
        }

        @Override
        public Allocation allocation(Path sessionDir) {
            return WorkspaceGrowth.allocation(sessionDir.resolve("workspace"));
        }

        @Override
        public void readyToWrite(Path sessionDir) {
            WorkspaceGrowth.roomNow(sessionDir.resolve("workspace"), WorkspaceGrowth.STEP);
        }

        /**
         * The image mounted at {@code disk}, its {@code w} bound at {@code workspace}; {@code rooted}: {@code r} too
         * (the server's, for the root's layers). The image is allocated whole while its file system is made, then its
         * free room beyond {@link WorkspaceGrowth#INITIAL} is given back to the host ({@link WorkspaceGrowth#inflate}).
         */
        private void make(Path sessionDir, long bytes, Runnable allocated, boolean rooted) throws IOException {
            Path workspace = Files.createDirectory(sessionDir.resolve("workspace"));
            Path disk = Files.createDirectory(sessionDir.resolve(DISK));
            Files.setPosixFilePermissions(disk, PosixFilePermissions.fromString("rwxr-xr-x"));
            makeImage(sessionDir, bytes, allocated);
            mount(sessionDir.resolve(IMAGE), disk);
            Files.deleteIfExists(disk.resolve("lost+found")); // e2fsck makes it again when it needs one
            Files.createDirectory(disk.resolve("w"));
            if (rooted) {
                Files.setPosixFilePermissions(Files.createDirectory(disk.resolve("r")),
                        PosixFilePermissions.fromString("rwxr-xr-x"));
            }
            if (DiskCalls.unmapsNever(disk)) {
                WorkspaceGrowth.inflate(sessionDir.resolve(IMAGE), disk, WorkspaceGrowth.INITIAL);
            }
            Mounts.bind(disk.resolve("w"), workspace);
            WorkspaceGrowth.watch(workspace, new WorkspaceGrowth.Mounted(sessionDir, sessionDir.resolve(IMAGE), disk,
                    growth));
        }

        /** The image of {@code bytes}, allocated whole, with an empty ext4 file system. */
        private void makeImage(Path sessionDir, long bytes, Runnable allocated) throws IOException {
            Path image = sessionDir.resolve(IMAGE);
            Files.createFile(image, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            long size = Math.max(MIN_BYTES, bytes);
            if (!DiskCalls.allocate(image, size)) {
                try (var file = FileChannel.open(image, StandardOpenOption.WRITE)) {
                    file.write(ByteBuffer.allocate(1), size - 1); // sparse
                }
            }
            allocated.run();
            // Every block of ext4's own metadata is allocated on the host for as long as the session lives, so it is
            // kept small (issue 50: 2,000 idle sessions on one disk): blocks of 1 KiB, so ext4's reserve for its
            // metadata (2% or 4,096 blocks) is 4 MiB, not 16, and its least journal 1 MiB; one inode per 32 KiB of quota
            // (32,768 files and directories per GiB; inode tables of 8 MiB, not 16), 4,096 at least (a root of its own
            // is a few thousand files); no blocks kept for resizing; no reserved blocks; inode tables and journal
            // zeroed lazily by the kernel: milliseconds, not seconds.
            String inodes = Long.toString(Math.max(4096, size / INODE_BYTES));
            DiskCalls.run(mkfs.toString(), "-q", "-F", "-m", "0", "-b", "1024", "-N", inodes, "-J", "size=1", "-O",
                    "^resize_inode", "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", image.toString());
        }

        @Override
        public void attach(Path sessionDir) throws IOException {
            Path image = sessionDir.resolve(IMAGE);
            Path workspace = sessionDir.resolve("workspace");
            if (Files.isRegularFile(image, LinkOption.NOFOLLOW_LINKS) && !DiskCalls.mounted(workspace)) {
                if (layered(sessionDir)) { // holes under its balloon, if it has one: allocated as far as it grew
                    Path disk = sessionDir.resolve(DISK);
                    if (!DiskCalls.mounted(disk)) {
                        mountAgain(image, disk);
                    }
                    boolean grows = DiskCalls.unmapsNever(disk);
                    if (!grows) {
                        DiskCalls.allocate(image, Files.size(image)); // the holes under its balloon too: it never grows
                    }
                    Mounts.bind(disk.resolve("w"), workspace);
                    if (grows) {
                        WorkspaceGrowth.watch(workspace, new WorkspaceGrowth.Mounted(sessionDir, image, disk, growth));
                    }
                    return;
                }
                try {
                    DiskCalls.allocate(image, Files.size(image)); // an image made sparse by an earlier version: its holes now
                } catch (IOException e) {
                    System.getLogger(WorkspaceDisk.class.getName()).log(System.Logger.Level.WARNING, "the workspace"
                            + " image " + image + " stays sparse (a full data directory can fail its writes): "
                            + e.getMessage());
                }
                mountAgain(image, workspace);
            }
        }

        @Override
        public void detach(Path sessionDir) {
            WorkspaceGrowth.forget(sessionDir.resolve("workspace"));
            DiskCalls.unmount(sessionDir.resolve("workspace"));
            if (layered(sessionDir)) {
                DiskCalls.unmount(sessionDir.resolve(DISK)); // after the workspace, a bind of its w
            }
        }

        @Override
        public boolean enforced() {
            return true;
        }

        @Override
        public String describe() {
            return "each workspace a loop-mounted ext4 image of its quota, allocated as it grows (kernel-enforced)";
        }

        /**
         * Mounts the image. {@code noinit_itable}: the kernel's lazy inode-table init zeroes those tables through the
         * loop device, which turns each zeroing into a hole punched in the image, so a workspace given all its blocks
         * at creation lost 16 MiB of them per GiB within a second of its mount, and a data directory filled meanwhile
         * then failed the workspace's own writes (a journal aborted, an image that no longer mounted: DataDirFullTest
         * under a CPU hog). Uninitialised tables are safe to leave so: ext4 knows their groups' unused inodes.
         */
        private static void mount(Path image, Path workspace) throws IOException {
            Mounts.loop(image, workspace, "ext4", OPTIONS, "noinit_itable");
        }

        /**
         * Mounts an image mounted before, on the loop device it may still be on (a sandbox's namespace still holding
         * its file system): then the same file system, never a second one over the same file.
         */
        private static void mountAgain(Path image, Path workspace) throws IOException {
            Mounts.loopAgain(image, workspace, "ext4", OPTIONS, "noinit_itable");
        }

        private static final long OPTIONS = Mounts.MS_NOSUID | Mounts.MS_NODEV | Mounts.MS_NOATIME;

    }

    /** No kernel bound: the quota holds for uploads only. */
    record Unbounded(String reason) implements WorkspaceDisk {
        @Override
        public void create(Path sessionDir, long bytes, Runnable allocated) throws IOException {
            Files.createDirectory(sessionDir.resolve("workspace"));
            allocated.run();
        }

        @Override
        public void attach(Path sessionDir) {}

        @Override
        public void detach(Path sessionDir) {}

        @Override
        public boolean enforced() {
            return false;
        }

        @Override
        public String describe() {
            return "workspace quota on uploads only: " + reason;
        }
    }
}
