package dev.crucible.os;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * Mounts through the kernel's own calls, where the server used to run {@code mount}: an image file on a loop device of
 * its own, and bind mounts. {@code mount -o loop} scans every loop device in use for one backed by the same file
 * before it takes a free one, so it slowed as sessions (each a loop-mounted workspace) grew; here a free device is
 * asked of {@code /dev/loop-control} and configured in one call ({@code LOOP_CONFIGURE}, Linux 5.8; {@code
 * LOOP_SET_FD} and {@code LOOP_SET_STATUS64} before), with {@code LO_FLAGS_AUTOCLEAR}: the device lets its file go
 * when the file system on it is unmounted, as {@code mount -o loop} sets it. Root only.
 */
public final class Mounts {
    public static final long MS_NOSUID = 2;
    public static final long MS_NODEV = 4;
    public static final long MS_NOATIME = 1024;
    private static final long MS_BIND = 4096;
    private static final long LOOP_SET_FD = 0x4C00;
    private static final long LOOP_CLR_FD = 0x4C01;
    private static final long LOOP_SET_STATUS64 = 0x4C04;
    private static final long LOOP_CONFIGURE = 0x4C0A;
    private static final long LOOP_CTL_GET_FREE = 0x4C82;
    private static final int LO_FLAGS_AUTOCLEAR = 4;
    private static final int O_RDWR = 2;
    private static final int EBUSY = 16;
    private static final int EINVAL = 22;
    private static final int ENOTTY = 25;
    /** {@code struct loop_info64}: five u64, four u32 ({@code lo_flags} the last), three names and keys, two u64. */
    private static final int LOOP_INFO64 = 232;
    private static final int LO_FLAGS_OFFSET = 52;
    private static final int LO_FILE_NAME_OFFSET = 56;
    /** {@code struct loop_config}: u32 fd, u32 block_size, the info, eight reserved u64. */
    private static final int LOOP_CONFIG = 8 + LOOP_INFO64 + 64;

    private static final MethodHandle MOUNT = Libc.errno("mount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS,
            ADDRESS, JAVA_LONG, ADDRESS));
    private static final MethodHandle UMOUNT2 = Libc.errno("umount2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final int MNT_DETACH = 2;
    private static final MethodHandle OPEN = Libc.errno("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    /** {@code int ioctl(int fd, unsigned long request, ...)}: the one argument passed as a long (a number or an address). */
    private static final MethodHandle IOCTL = Libc.variadic("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG,
            JAVA_LONG), 2);

    private Mounts() {}

    /**
     * Mounts the file system in {@code image} on {@code target} through a loop device of its own.
     *
     * @param type the file system's type ({@code ext4})
     * @param flags {@code MS_*} flags
     * @param data the file system's options ({@code noinit_itable}), or null
     * @throws Linux.ErrnoException for the call that failed (nothing is left configured or mounted)
     */
    public static void loop(Path image, Path target, String type, long flags, String data) throws IOException {
        int control = open("/dev/loop-control", O_RDWR | Linux.O_CLOEXEC);
        int file = -1;
        try {
            file = open(image.toString(), O_RDWR | Linux.O_CLOEXEC);
            for (int attempt = 0; ; attempt++) {
                int number = ioctl("ioctl(LOOP_CTL_GET_FREE)", control, LOOP_CTL_GET_FREE, 0);
                String device = "/dev/loop" + number;
                int loop = openDevice(device);
                try {
                    if (!configure(loop, file, image)) {
                        if (attempt < 32) {
                            continue; // taken by another process between the two calls: ask for another
                        }
                        throw new Linux.ErrnoException("ioctl(LOOP_CONFIGURE)", device, EBUSY);
                    }
                    try {
                        mount(device, target, type, flags, data);
                    } catch (IOException | RuntimeException e) {
                        try {
                            ioctl("ioctl(LOOP_CLR_FD)", loop, LOOP_CLR_FD, 0);
                        } catch (IOException left) {
                            e.addSuppressed(left);
                        }
                        throw e;
                    }
                    return; // the mount holds the device; closing ours leaves it to AUTOCLEAR at the unmount
                } finally {
                    Linux.close(loop);
                }
            }
        } finally {
            if (file >= 0) {
                Linux.close(file);
            }
            Linux.close(control);
        }
    }

    /**
     * As {@link #loop}, for an image that may still be on a loop device: one whose file system was unmounted here
     * while a sandbox's mount namespace, not yet gone, still held it. That device is mounted again, so the kernel
     * gives the same file system (its writes not yet on the image included); a second device on the same file would
     * read the image as it is on disk, and two file systems would then write it. {@code mount -o loop} looks for such
     * a device every time; here only an image mounted before is looked for, by its file's device and inode, among the
     * loop devices in use ({@code /sys/block/loop*}/{@code loop/backing_file}).
     */
    public static void loopAgain(Path image, Path target, String type, long flags, String data) throws IOException {
        String device = deviceOf(image);
        if (device != null) {
            try {
                mount(device, target, type, flags, data);
                return;
            } catch (Linux.ErrnoException e) {
                // let go meanwhile (its last user gone, autoclear): a device of its own, as for a new image
            }
        }
        loop(image, target, type, flags, data);
    }

    /** The loop device backing {@code image} now ({@code /dev/loopN}), or null. */
    static String deviceOf(Path image) throws IOException {
        Object dev = Files.getAttribute(image, "unix:dev");
        Object ino = Files.getAttribute(image, "unix:ino");
        try (var blocks = Files.newDirectoryStream(Path.of("/sys/block"), "loop*")) {
            for (Path block : blocks) {
                Path backing = block.resolve("loop/backing_file"); // present only while the device is in use
                try {
                    Path file = Path.of(Files.readString(backing).strip());
                    if (dev.equals(Files.getAttribute(file, "unix:dev")) && ino.equals(Files.getAttribute(file,
                            "unix:ino"))) {
                        return "/dev/" + block.getFileName();
                    }
                } catch (IOException | InvalidPathException e) {
                    // not in use, let go meanwhile, or its file deleted ("… (deleted)"): not this image's
                }
            }
        }
        return null;
    }

    /** Binds {@code source} on {@code target} (not recursive: what is mounted under {@code source} is not carried). */
    public static void bind(Path source, Path target) throws IOException {
        mount(source.toString(), target, null, MS_BIND, null);
    }

    /** Gives {@code file} to the loop device {@code loop}; false when another took the device first. */
    private static boolean configure(int loop, int file, Path image) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = arena.allocate(LOOP_CONFIG, 8);
            config.set(JAVA_INT, 0, file);
            MemorySegment info = config.asSlice(8, LOOP_INFO64);
            info.set(JAVA_INT, LO_FLAGS_OFFSET, LO_FLAGS_AUTOCLEAR);
            byte[] name = image.toString().getBytes(StandardCharsets.UTF_8);
            MemorySegment.copy(name, 0, info, ValueLayout.JAVA_BYTE, LO_FILE_NAME_OFFSET,
                    Math.min(name.length, 63));
            try {
                ioctl("ioctl(LOOP_CONFIGURE)", loop, LOOP_CONFIGURE, config.address());
                return true;
            } catch (Linux.ErrnoException e) {
                if (e.errno() == EBUSY) {
                    return false;
                }
                if (e.errno() != EINVAL && e.errno() != ENOTTY) {
                    throw e;
                }
            }
            // before Linux 5.8: the file, then its flags
            try {
                ioctl("ioctl(LOOP_SET_FD)", loop, LOOP_SET_FD, file);
            } catch (Linux.ErrnoException e) {
                if (e.errno() == EBUSY) {
                    return false;
                }
                throw e;
            }
            try {
                ioctl("ioctl(LOOP_SET_STATUS64)", loop, LOOP_SET_STATUS64, info.address());
            } catch (IOException e) {
                ioctl("ioctl(LOOP_CLR_FD)", loop, LOOP_CLR_FD, 0);
                throw e;
            }
            return true;
        }
    }

    private static void mount(String source, Path target, String type, long flags, String data) throws IOException {
        Libc.check("mount", target.toString(), (state, arena) -> {
            MemorySegment fsType = type == null ? MemorySegment.NULL : arena.allocateFrom(type);
            MemorySegment options = data == null ? MemorySegment.NULL : arena.allocateFrom(data);
            return (int) MOUNT.invokeExact(state, arena.allocateFrom(source), arena.allocateFrom(target.toString()),
                    fsType, flags, options);
        });
    }

    /** A loop device just made by the kernel: its node may take a moment to appear in devtmpfs. */
    private static int openDevice(String device) throws IOException {
        for (int attempt = 0; ; attempt++) {
            try {
                return open(device, O_RDWR | Linux.O_CLOEXEC);
            } catch (Linux.ErrnoException e) {
                if (e.errno() != Linux.ENOENT || attempt >= 50) {
                    throw e;
                }
                LockSupport.parkNanos(1_000_000);
            }
        }
    }

    /**
     * Unmounts {@code target}; {@code detach}: at once from the tree, freed when no longer busy ({@code MNT_DETACH}).
     */
    public static void unmount(Path target, boolean detach) throws IOException {
        Libc.check("umount2", target.toString(), (state, arena) -> (int) UMOUNT2.invokeExact(state,
                arena.allocateFrom(target.toString()), detach ? MNT_DETACH : 0));
    }

    private static int open(String path, int flags) throws IOException {
        int[] fd = new int[1];
        Libc.check("open", path, (state, arena) -> fd[0] = (int) OPEN.invokeExact(state, arena.allocateFrom(path), flags));
        return fd[0];
    }

    private static int ioctl(String call, int fd, long request, long argument) throws IOException {
        int[] result = new int[1];
        Libc.check(call, null, (state, arena) -> result[0] = (int) IOCTL.invokeExact(state, fd, request, argument));
        return result[0];
    }
}
