package dev.crucible.os;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Method;
import java.nio.channels.SocketChannel;

/**
 * Bytes moved from one connected socket to another through a pipe inside the kernel ({@code splice(2)}), never
 * through this process's memory: the egress proxy's relay at wire speed.
 *
 * <p>Both sockets' descriptors are duplicated when the splice is made and owned by it: a {@link SocketChannel} closed
 * meanwhile by another thread cannot have its number reused under a splice (which would move bytes to or from
 * whatever was opened next). The duplicates keep the sockets open until {@link #close()}, so whoever wants a blocked
 * splice to end <em>shuts the sockets down</em> ({@link #shutDown}) before closing its channels: a shut-down source
 * reads as its end, a shut-down target fails the write.
 *
 * <p>A socket's descriptor is read through the JDK's own {@code sun.nio.ch.SelChImpl}, exported to this code by the
 * JAR's manifest ({@code Add-Exports}) and by the tests' {@code --add-exports}; where it is not, {@link #available()}
 * is false and callers copy as before. Calls block in native code: use them on platform threads. Not thread-safe: one
 * thread fills and drains a splice.
 */
public final class Splice implements AutoCloseable {
    /**
     * What one fill may take: the pipe's size, asked for when the pipe is made (the kernel may grant less). A full pipe
     * holds this much of the server's memory per direction, less than the socket buffers on either side of it already
     * may (TCP grows them to megabytes); 1 MiB measured a little faster than 256 KiB (fewer calls).
     */
    public static final int CHUNK = 1 << 20;

    private static final MethodHandle SPLICE = Libc.errno("splice",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle FCNTL = Libc.variadic("fcntl",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), 2);
    private static final MethodHandle POLL = Libc.errno("poll",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final int F_DUPFD_CLOEXEC = 1030;
    private static final int F_SETPIPE_SZ = 1031;
    private static final int SPLICE_F_MOVE = 1;
    private static final short POLLIN = 1;
    private static final short POLLOUT = 4;
    private static final int EINTR = 4;
    private static final int EAGAIN = 11;
    private static final Method FD_VAL = descriptorReader();

    private final int from;
    private final int to;
    private final int pipeRead;
    private final int pipeWrite;
    private boolean closed;

    private Splice(int from, int to, int pipeRead, int pipeWrite) {
        this.from = from;
        this.to = to;
        this.pipeRead = pipeRead;
        this.pipeWrite = pipeWrite;
    }

    /** True when this JVM lets a channel's descriptor be read (the JDK's {@code sun.nio.ch} is exported to us). */
    public static boolean available() {
        return FD_VAL != null;
    }

    /** A splice from {@code source} to {@code target}: both descriptors duplicated, and a pipe of its own. */
    public static Splice between(SocketChannel source, SocketChannel target) throws IOException {
        if (FD_VAL == null) {
            throw new IOException("splice is not available: run with --add-exports java.base/sun.nio.ch=ALL-UNNAMED");
        }
        int from = duplicate(descriptorOf(source));
        int to = -1;
        try {
            to = duplicate(descriptorOf(target));
            int[] pipe = Descriptors.pipe();
            fcntl(pipe[1], F_SETPIPE_SZ, CHUNK); // a larger pipe, fewer calls; the default 64 KiB still works
            return new Splice(from, to, pipe[0], pipe[1]);
        } catch (IOException | RuntimeException e) {
            Linux.close(from);
            if (to >= 0) {
                Linux.close(to);
            }
            throw e;
        }
    }

    /**
     * Moves what the source has, at most {@code max} bytes, into the pipe, waiting until it has some.
     *
     * @return the bytes now in the pipe; 0 at the source's end (or once it was shut down)
     */
    public long fill(long max) throws IOException {
        while (true) {
            long moved = splice(from, pipeWrite, max);
            if (moved >= 0) {
                return moved;
            }
            await(from, POLLIN);
        }
    }

    /** Moves {@code bytes} of what {@link #fill} put in the pipe to the target, waiting while the target is full. */
    public void drain(long bytes) throws IOException {
        long left = bytes;
        while (left > 0) {
            long moved = splice(pipeRead, to, left);
            if (moved > 0) {
                left -= moved;
            } else if (moved == 0) {
                throw new IOException("splice: the pipe ran dry with " + left + " bytes still to move");
            } else {
                await(to, POLLOUT);
            }
        }
    }

    /** Shuts {@code channel} down both ways (ending any splice blocked on it), then closes it; never throws. */
    public static void shutDown(SocketChannel channel) {
        if (channel == null) {
            return;
        }
        try {
            channel.shutdownInput();
            channel.shutdownOutput();
        } catch (IOException | IllegalStateException ignored) {
            // already closed, or never connected: nothing blocks on it
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing is all that is left to do
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Linux.close(pipeWrite);
            Linux.close(pipeRead);
            Linux.close(to);
            Linux.close(from);
        }
    }

    /** One {@code splice}: the bytes moved, or -1 when the non-blocking side would wait ({@code EAGAIN}). */
    private static long splice(int in, int out, long max) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Libc.CALL_STATE);
            while (true) {
                long moved = (long) SPLICE.invokeExact(state, in, MemorySegment.NULL, out, MemorySegment.NULL, max,
                        SPLICE_F_MOVE);
                if (moved >= 0) {
                    return moved;
                }
                int errno = Libc.errnoIn(state);
                if (errno == EAGAIN) {
                    return -1;
                }
                if (errno != EINTR) {
                    throw new Linux.ErrnoException("splice", null, errno);
                }
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("splice", t);
        }
    }

    /** Waits until {@code fd} is ready for {@code events} (or hung up, or in error: the next splice says which). */
    private static void await(int fd, short events) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Libc.CALL_STATE);
            MemorySegment pollfd = arena.allocate(8, 4);
            pollfd.set(JAVA_INT, 0, fd);
            pollfd.set(JAVA_SHORT, 4, events);
            while ((int) POLL.invokeExact(state, pollfd, 1L, -1) < 0) {
                if (Libc.errnoIn(state) != EINTR) {
                    throw new Linux.ErrnoException("poll", null, Libc.errnoIn(state));
                }
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("poll", t);
        }
    }

    private static int duplicate(int fd) throws IOException {
        return fcntl(fd, F_DUPFD_CLOEXEC, 3);
    }

    private static int fcntl(int fd, int command, int argument) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Libc.CALL_STATE);
            int result = (int) FCNTL.invokeExact(state, fd, command, argument);
            if (result < 0 && command != F_SETPIPE_SZ) {
                throw new Linux.ErrnoException("fcntl", null, Libc.errnoIn(state));
            }
            return result;
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fcntl", t);
        }
    }

    private static int descriptorOf(SocketChannel channel) throws IOException {
        try {
            return (int) FD_VAL.invoke(channel);
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new IOException("cannot read the descriptor of " + channel, e);
        }
    }

    /** {@code SelChImpl.getFDVal}, when {@code sun.nio.ch} is exported to this code; otherwise null. */
    private static Method descriptorReader() {
        try {
            Class<?> type = Class.forName("sun.nio.ch.SelChImpl");
            if (!type.getModule().isExported("sun.nio.ch", Splice.class.getModule())) {
                return null;
            }
            return type.getMethod("getFDVal");
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
