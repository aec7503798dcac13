package dev.crucible.os;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A network namespace the server makes for one sandbox: nothing in it but {@code lo}, up, and, for a sandbox that may
 * reach its egress proxy, one listening socket of the server's on {@code 127.0.0.1:PORT}. The namespace belongs to the host's user
 * namespace, so a sandbox inside it holds no capability over it (no routes, no addresses, no raw sockets can be added);
 * it has no route anywhere but loopback. The listener's file descriptor lives in the server, which answers it: nothing
 * of ours runs inside the sandbox.
 *
 * <p>{@link #create(int)} switches the <em>calling thread</em> into the new namespace and back (namespaces are per
 * thread on Linux), so it must run on a platform thread that creates no thread meanwhile. Needs CAP_SYS_ADMIN (root).
 * The sandbox's launcher joins the namespace with {@code setns} on {@link #path()}, a magic link to the descriptor held
 * here, which must stay open until the launcher has started: {@link #close()} after the spawn. While it is open,
 * {@link #socket()} makes sockets inside it: the server's way to the sandbox's own servers (a session's ports), a
 * socket staying in the namespace it was made in whichever thread connects it.
 */
public final class NetNamespace implements AutoCloseable {
    private static final int CLONE_NEWNET = 0x40000000;
    private static final int AF_INET = 2;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_CLOEXEC = 02000000;
    private static final long SIOCGIFFLAGS = 0x8913;
    private static final long SIOCSIFFLAGS = 0x8914;
    private static final short IFF_UP = 0x1;
    /** {@code struct ifreq}: a 16-byte name, then a 24-byte union whose first member is {@code short ifr_flags}. */
    private static final int IFREQ_SIZE = 40;
    private static final int IFNAMSIZ = 16;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(
            MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle UNSHARE = errno("unshare", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle SETNS = errno("setns", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle SOCKET = errno("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle IOCTL = LINKER.downcallHandle(LIBC.find("ioctl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.captureCallState("errno"),
            Linker.Option.firstVariadicArg(2));

    private final int fd;
    private final ServerSocketChannel listener;
    private boolean closed; // under this object's lock, as every use of fd: a closed number is the next file's

    /** The one platform thread that enters namespaces to make sockets in them (it creates no thread meanwhile). */
    private static final ExecutorService DIALER = Executors.newSingleThreadExecutor(
            Thread.ofPlatform().name("crucible-netns-dialer").daemon().factory());

    private NetNamespace(int fd, ServerSocketChannel listener) {
        this.fd = fd;
        this.listener = listener;
    }

    /** A namespace with {@code lo} up and nothing listening, as {@link #create(int)} otherwise. */
    public static NetNamespace create() throws IOException {
        return create(0);
    }

    /**
     * Makes a namespace with {@code lo} up and a listener on {@code 127.0.0.1:port} in it (none for port 0), leaving
     * the calling thread in the namespace it was in.
     *
     * @throws IOException when the namespace cannot be made (errno 1, EPERM: the server is not root)
     * @throws IllegalStateException when the thread cannot return to its own namespace (it must then not be used)
     */
    public static NetNamespace create(int port) throws IOException {
        int home = Linux.openat2(-100, "/proc/thread-self/ns/net", Linux.O_RDONLY | Linux.O_CLOEXEC, 0, 0);
        try {
            call("unshare(CLONE_NEWNET)", (state) -> (int) UNSHARE.invokeExact(state, CLONE_NEWNET));
            ServerSocketChannel listener = null;
            try {
                loopbackUp();
                if (port > 0) {
                    listener = ServerSocketChannel.open(StandardProtocolFamily.INET);
                    listener.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 1}), port), 64);
                }
                int fd = Linux.openat2(-100, "/proc/thread-self/ns/net", Linux.O_RDONLY | Linux.O_CLOEXEC, 0, 0);
                return new NetNamespace(fd, listener);
            } catch (IOException | RuntimeException e) {
                if (listener != null) {
                    listener.close();
                }
                throw e;
            } finally {
                try {
                    call("setns(home)", (state) -> (int) SETNS.invokeExact(state, home, CLONE_NEWNET));
                } catch (IOException e) {
                    throw new IllegalStateException("this thread cannot return to its network namespace: " + e.getMessage());
                }
            }
        } finally {
            Linux.close(home);
        }
    }

    /** {@code ifconfig lo up} in this thread's namespace: a fresh namespace's loopback is down. */
    private static void loopbackUp() throws IOException {
        int sock = call("socket", (state) -> (int) SOCKET.invokeExact(state, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ifreq = arena.allocate(IFREQ_SIZE, 8);
            ifreq.setString(0, "lo");
            call("ioctl(SIOCGIFFLAGS)", (state) -> (int) IOCTL.invokeExact(state, sock, SIOCGIFFLAGS, ifreq));
            ifreq.set(JAVA_SHORT, IFNAMSIZ, (short) (ifreq.get(JAVA_SHORT, IFNAMSIZ) | IFF_UP));
            call("ioctl(SIOCSIFFLAGS)", (state) -> (int) IOCTL.invokeExact(state, sock, SIOCSIFFLAGS, ifreq));
        } finally {
            Linux.close(sock);
        }
    }

    /** The path a root process opens to join the namespace while this object is open: {@code /proc/PID/fd/N}. */
    public String path() {
        return "/proc/" + ProcessHandle.current().pid() + "/fd/" + fd;
    }

    /**
     * An unconnected TCP socket (IPv4, blocking) made inside the namespace, on the dialer thread: connect it to
     * {@code 127.0.0.1:PORT} to reach what listens there.
     *
     * @throws IOException when the namespace is closed, or the socket cannot be made
     */
    public SocketChannel socket() throws IOException {
        Future<SocketChannel> made = DIALER.submit(this::socketHere);
        try {
            return made.get();
        } catch (InterruptedException e) {
            made.cancel(false);
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while making a socket in a sandbox's namespace");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** On the dialer thread: into the namespace, a socket, back home (the thread is unusable if that fails). */
    private synchronized SocketChannel socketHere() throws IOException {
        if (closed) {
            throw new IOException("the sandbox's network namespace is closed (the sandbox ended)");
        }
        int home = Linux.openat2(-100, "/proc/thread-self/ns/net", Linux.O_RDONLY | Linux.O_CLOEXEC, 0, 0);
        try {
            call("setns(sandbox)", (state) -> (int) SETNS.invokeExact(state, fd, CLONE_NEWNET));
            try {
                return SocketChannel.open(StandardProtocolFamily.INET);
            } finally {
                try {
                    call("setns(home)", (state) -> (int) SETNS.invokeExact(state, home, CLONE_NEWNET));
                } catch (IOException e) {
                    throw new IllegalStateException("the dialer thread cannot return to its network namespace: "
                            + e.getMessage());
                }
            }
        } finally {
            Linux.close(home);
        }
    }

    /** The server's listener inside the namespace, at {@code 127.0.0.1:port} (null when made without); its owner closes it. */
    public ServerSocketChannel listener() {
        return listener;
    }

    /**
     * Lets go of the namespace's descriptor (the namespace lives on while the sandbox or the listener does). Idempotent:
     * the descriptor's number is closed once, never again after another file may have taken it.
     */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            Linux.close(fd);
        }
    }

    @FunctionalInterface
    private interface Call {
        int invoke(MemorySegment state) throws Throwable;
    }

    private static int call(String what, Call call) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int r = call.invoke(state);
            if (r < 0) {
                throw new Linux.ErrnoException(what, null, (int) ERRNO.get(state, 0L));
            }
            return r;
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what, t);
        }
    }

    private static MethodHandle errno(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor, Linker.Option.captureCallState("errno"));
    }
}
