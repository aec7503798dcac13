package dev.crucible.os;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where a file's blocks are on its device ({@code FS_IOC_FIEMAP}, what {@code filefrag} reads): for a file on a
 * loop-mounted image, the byte ranges of the image that hold it. Needs no privilege beyond reading the file.
 */
public final class Extents {
    /** One extent: {@code length} bytes of the file from {@code logical}, at {@code physical} on its device. */
    public record Extent(long logical, long physical, long length) {}

    private static final long FS_IOC_FIEMAP = 0xC020660BL;
    private static final int FIEMAP_FLAG_SYNC = 1;
    private static final int FIEMAP_EXTENT_LAST = 1;
    private static final int HEADER = 32;
    private static final int EXTENT = 56;
    private static final int BATCH = 256;
    private static final int O_RDONLY = 0;

    private static final MethodHandle OPEN = Libc.errno("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle IOCTL = Libc.variadic("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG,
            JAVA_LONG), 2);

    private Extents() {}

    /** The bytes {@code file} has allocated on its file system: the sum of its extents' lengths. */
    public static long allocated(Path file) throws IOException {
        long sum = 0;
        for (Extent e : of(file, 0, Files.size(file))) {
            sum += e.length();
        }
        return sum;
    }

    /**
     * The extents of {@code file} that overlap its bytes {@code [from, from + length)}, in the file's order, each
     * clipped to that range (dirty pages are written first, so delayed allocations have their places).
     *
     * @throws Linux.ErrnoException for the call that failed ({@code EOPNOTSUPP}: a file system without it)
     */
    public static List<Extent> of(Path file, long from, long length) throws IOException {
        int[] fd = new int[1];
        Libc.check("open", file.toString(), (state, arena) -> fd[0] = (int) OPEN.invokeExact(state,
                arena.allocateFrom(file.toString()), O_RDONLY | Linux.O_NOFOLLOW | Linux.O_CLOEXEC));
        List<Extent> extents = new ArrayList<>();
        long end = from + length;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment map = arena.allocate(HEADER + (long) EXTENT * BATCH, 8);
            long start = from;
            while (start < end) {
                map.fill((byte) 0);
                map.set(JAVA_LONG, 0, start);
                map.set(JAVA_LONG, 8, end - start);
                map.set(JAVA_INT, 16, FIEMAP_FLAG_SYNC);
                map.set(JAVA_INT, 24, BATCH);
                Libc.check("ioctl(FS_IOC_FIEMAP)", file.toString(), (state, a) -> (int) IOCTL.invokeExact(state,
                        fd[0], FS_IOC_FIEMAP, map.address()));
                int mapped = map.get(JAVA_INT, 20);
                if (mapped == 0) {
                    break;
                }
                boolean last = false;
                for (int i = 0; i < mapped; i++) {
                    long at = HEADER + (long) EXTENT * i;
                    long logical = map.get(JAVA_LONG, at);
                    long physical = map.get(JAVA_LONG, at + 8);
                    long size = map.get(JAVA_LONG, at + 16);
                    int flags = map.get(JAVA_INT, at + 40);
                    long lo = Math.max(logical, from);
                    long hi = Math.min(logical + size, end);
                    if (hi > lo) {
                        extents.add(new Extent(lo, physical + (lo - logical), hi - lo));
                    }
                    start = logical + size;
                    last |= (flags & FIEMAP_EXTENT_LAST) != 0;
                }
                if (last) {
                    break;
                }
            }
        } finally {
            Linux.close(fd[0]);
        }
        return extents;
    }
}
