package dev.crucible.os;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Raw file descriptors the JDK does not hand out: pipes whose ends go to another process over a unix socket, a
 * {@code SOCK_SEQPACKET} connection, and {@code SCM_RIGHTS} (the zygote's control channel, docs/zygote.md). Every
 * descriptor is made close-on-exec. Calls block in native code: use them on platform threads.
 */
public final class Descriptors {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(
            MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle PIPE2 = errno("pipe2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SOCKET = errno("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CONNECT = errno("connect", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SENDMSG = errno("sendmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle RECV = errno("recv", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle READ = errno("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle WRITE = errno("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final int O_CLOEXEC = 02000000;
    private static final int AF_UNIX = 1;
    private static final int SOCK_SEQPACKET = 5;
    private static final int SOCK_CLOEXEC = 02000000;
    private static final int SOL_SOCKET = 1;
    private static final int SCM_RIGHTS = 1;
    private static final int MSG_NOSIGNAL = 0x4000;
    private static final int MSG_DONTWAIT = 0x40;
    private static final int EINTR = 4;

    private Descriptors() {}

    private static MethodHandle errno(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor, Linker.Option.captureCallState("errno"));
    }

    /** A pipe: {@code [read end, write end]}, both close-on-exec. */
    public static int[] pipe() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = arena.allocate(JAVA_INT, 2);
            MemorySegment state = arena.allocate(CALL_STATE);
            if ((int) PIPE2.invokeExact(state, fds, O_CLOEXEC) != 0) {
                throw failed("pipe2", state);
            }
            return new int[] {fds.getAtIndex(JAVA_INT, 0), fds.getAtIndex(JAVA_INT, 1)};
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("pipe2", t);
        }
    }

    /** A {@code SOCK_SEQPACKET} connection to the unix socket at {@code path}. */
    public static int connectSeqpacket(String path) throws IOException {
        byte[] name = path.getBytes(StandardCharsets.UTF_8);
        if (name.length >= 108) {
            throw new IOException("socket path too long: " + path);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int fd = (int) SOCKET.invokeExact(state, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw failed("socket", state);
            }
            MemorySegment address = arena.allocate(110);
            address.set(JAVA_SHORT, 0, (short) AF_UNIX);
            MemorySegment.copy(name, 0, address, JAVA_BYTE, 2, name.length);
            if ((int) CONNECT.invokeExact(state, fd, address, 110) != 0) {
                IOException e = failed("connect " + path, state);
                Linux.close(fd);
                throw e;
            }
            return fd;
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("connect", t);
        }
    }

    /**
     * Sends one message with {@code fds} attached ({@code SCM_RIGHTS}); the receiver gets its own copies. Never waits:
     * when the socket's buffer is full (a peer that stopped reading) it fails at once ({@code EAGAIN}), so a stuck
     * peer cannot hold the caller.
     */
    public static void send(int socket, byte[] message, int... fds) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(JAVA_BYTE, message);
            MemorySegment iov = arena.allocate(16, 8);
            iov.set(ADDRESS, 0, data);
            iov.set(JAVA_LONG, 8, message.length);
            long controlLength = fds.length == 0 ? 0 : 16 + ((fds.length * 4L + 7) & ~7L); // CMSG_SPACE
            MemorySegment control = fds.length == 0 ? MemorySegment.NULL : arena.allocate(controlLength, 8);
            if (fds.length > 0) {
                control.set(JAVA_LONG, 0, 16 + fds.length * 4L); // CMSG_LEN
                control.set(JAVA_INT, 8, SOL_SOCKET);
                control.set(JAVA_INT, 12, SCM_RIGHTS);
                for (int i = 0; i < fds.length; i++) {
                    control.set(JAVA_INT, 16 + 4L * i, fds[i]);
                }
            }
            MemorySegment header = arena.allocate(56, 8); // struct msghdr
            header.set(ADDRESS, 16, iov);
            header.set(JAVA_LONG, 24, 1);
            header.set(ADDRESS, 32, control);
            header.set(JAVA_LONG, 40, controlLength);
            MemorySegment state = arena.allocate(CALL_STATE);
            long sent;
            do {
                sent = (long) SENDMSG.invokeExact(state, socket, header, MSG_NOSIGNAL | MSG_DONTWAIT);
            } while (sent < 0 && (int) ERRNO.get(state, 0L) == EINTR);
            if (sent != message.length) {
                throw failed("sendmsg", state);
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("sendmsg", t);
        }
    }

    /** Receives one message into {@code buffer}; its length, 0 at the end of the connection. */
    public static int receive(int socket, byte[] buffer) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(buffer.length);
            MemorySegment state = arena.allocate(CALL_STATE);
            long n;
            do {
                n = (long) RECV.invokeExact(state, socket, data, (long) buffer.length, 0);
            } while (n < 0 && (int) ERRNO.get(state, 0L) == EINTR);
            if (n < 0) {
                throw failed("recv", state);
            }
            MemorySegment.copy(data, JAVA_BYTE, 0, buffer, 0, (int) n);
            return (int) n;
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("recv", t);
        }
    }

    /** An input stream reading {@code fd}, which it closes when closed. */
    public static InputStream input(int fd) {
        return new FdInput(fd);
    }

    /** An output stream writing {@code fd}, which it closes when closed. */
    public static OutputStream output(int fd) {
        return new FdOutput(fd);
    }

    private static IOException failed(String call, MemorySegment state) {
        return new IOException(call + ": errno " + (int) ERRNO.get(state, 0L));
    }

    private static final class FdInput extends InputStream {
        private final int fd;
        private final AtomicBoolean closed = new AtomicBoolean();

        FdInput(int fd) {
            this.fd = fd;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (closed.get()) {
                throw new IOException("closed");
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buffer = arena.allocate(len);
                MemorySegment state = arena.allocate(CALL_STATE);
                long n;
                do {
                    n = (long) READ.invokeExact(state, fd, buffer, (long) len);
                } while (n < 0 && (int) ERRNO.get(state, 0L) == EINTR);
                if (n < 0) {
                    throw failed("read", state);
                }
                if (n == 0) {
                    return -1;
                }
                MemorySegment.copy(buffer, JAVA_BYTE, 0, b, off, (int) n);
                return (int) n;
            } catch (IOException e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("read", t);
            }
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                Linux.close(fd);
            }
        }
    }

    private static final class FdOutput extends OutputStream {
        private final int fd;
        private final AtomicBoolean closed = new AtomicBoolean();

        FdOutput(int fd) {
            this.fd = fd;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (closed.get()) {
                throw new IOException("closed");
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buffer = arena.allocate(Math.max(1, len));
                MemorySegment.copy(b, off, buffer, JAVA_BYTE, 0, len);
                MemorySegment state = arena.allocate(CALL_STATE);
                long done = 0;
                while (done < len) {
                    long n = (long) WRITE.invokeExact(state, fd, buffer.asSlice(done), (long) len - done);
                    if (n < 0) {
                        if ((int) ERRNO.get(state, 0L) == EINTR) {
                            continue;
                        }
                        throw failed("write", state);
                    }
                    done += n;
                }
            } catch (IOException e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("write", t);
            }
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                Linux.close(fd);
            }
        }
    }
}
