package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.session.spec.PortInfo;
import java.io.IOException;
import java.net.ConnectException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The ports of one session (issue 27): what listens in its running sandbox, and connections to it made by the server
 * in the sandbox's own network namespace (a session's servers are reached; the host's loopback cannot even be named).
 * An open connection is use of the session.
 *
 * <p>Connections a caller hands back ({@link Connection#release()}: its exchange ended cleanly, the answer read to its
 * end) are kept alive for the next request to the same port of the same sandbox ({@link #reuse}): at most
 * {@link #KEPT_PER_PORT} per port and {@link #KEPT_PER_SANDBOX} per sandbox, each for {@link #KEPT_MS} at most, never
 * for another sandbox (the key is the sandbox itself, so a session's restart or another session never gets one), and
 * closed within a second of the sandbox's end. A kept connection is no use of the session (it may go idle); one that
 * has something to read when taken (the server closed it, or sent what was not asked for) is closed instead.
 */
public final class SessionPorts {
    /** Kept-alive connections per port of one sandbox, and per sandbox, at most. */
    public static final int KEPT_PER_PORT = 8, KEPT_PER_SANDBOX = 32;
    /** How long a connection is kept unused: under common servers' shortest keep-alive timeout (Node's 5 s). */
    public static final long KEPT_MS = 4_000;

    /** The kept connections of every sandbox, by sandbox and port, oldest first; guarded by itself. */
    private static final Map<Key, ArrayDeque<Kept>> KEPT = new HashMap<>();
    private static ScheduledExecutorService sweeper; // guarded by KEPT

    private record Key(Sandbox.Interactive box, int port) {}
    private record Kept(SocketChannel channel, long sinceNs) {}

    private final Session session;

    SessionPorts(Session session) {
        this.session = session;
    }

    /** The session's id. */
    public String id() {
        return session.stored.id();
    }

    /** When the session ends at the latest (its lifetime): nothing that names it may outlive that. */
    public long endOfLifeMs() {
        return session.stored.endOfLifeMs();
    }

    /** The ports something listens on in its sandbox now; none when it is not running. */
    public List<PortInfo> list() {
        return session.ports();
    }

    /**
     * Connects to {@code 127.0.0.1:port} in the session's running sandbox; the session is in use until the connection
     * is closed.
     *
     * @throws RequestException {@code invalid_request} for a port outside 1-65535 or the egress proxy's own port of a
     *     session with egress, {@code ports_unavailable} on a host that gives sandboxes no namespace of the server's,
     *     {@code port_not_listening} when the sandbox is not running or nothing listens there
     */
    public Connection connect(int port) {
        if (port < 1 || port > 65_535) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a port is 1-65535, not " + port);
        }
        List<String> egress = session.stored.egress();
        if (port == SandboxSpec.PROXY_PORT && egress != null && !egress.isEmpty()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "port " + port + " of a session with egress is its"
                    + " egress proxy's, not a server of the session's");
        }
        Sandbox.Interactive box = session.box;
        if (box == null || !box.alive()) {
            throw new RequestException(ErrorCode.PORT_NOT_LISTENING, "session " + id() + " is not running, so"
                    + " nothing listens on its port " + port + ": start your server with POST /v1/sessions/" + id()
                    + "/commands and \"background\": true");
        }
        String unavailable = box.portsUnavailable();
        if (unavailable != null) {
            throw new RequestException(ErrorCode.PORTS_UNAVAILABLE, unavailable);
        }
        session.touch();
        SocketChannel channel;
        try {
            channel = box.connect(port);
            channel.socket().setTcpNoDelay(true); // a request head and its answer are each one write: none waits
        } catch (ConnectException e) {
            throw new RequestException(ErrorCode.PORT_NOT_LISTENING, "nothing listens on port " + port + " in session "
                    + id() + " (a server must listen on 127.0.0.1 or 0.0.0.0 there; GET /v1/sessions/" + id()
                    + " lists the ports that do)");
        } catch (IOException e) {
            throw new RequestException(ErrorCode.PORT_NOT_LISTENING, "cannot reach port " + port + " in session "
                    + id() + ": " + e.getMessage());
        }
        session.portConnections.incrementAndGet();
        return new Connection(box, channel, port, false);
    }

    /**
     * A connection kept alive from an earlier exchange with {@code 127.0.0.1:port} in this session's running sandbox
     * (no thread or namespace switched to take it), or a new one as {@link #connect} makes (and throws).
     */
    public Connection reuse(int port) {
        Sandbox.Interactive box = session.box;
        if (box != null && box.alive() && port >= 1 && port <= 65_535) {
            SocketChannel kept;
            while ((kept = take(box, port)) != null) {
                if (quiet(kept)) {
                    session.touch();
                    session.portConnections.incrementAndGet();
                    return new Connection(box, kept, port, true);
                }
                closeQuietly(kept);
            }
        }
        return connect(port);
    }

    private static SocketChannel take(Sandbox.Interactive box, int port) {
        synchronized (KEPT) {
            ArrayDeque<Kept> kept = KEPT.get(new Key(box, port));
            Kept last = kept == null ? null : kept.pollLast(); // the most recently used: the least likely let go
            return last == null ? null : last.channel();
        }
    }

    /** Whether a kept connection has nothing to read: not closed by its server, nothing sent that was not asked for. */
    private static boolean quiet(SocketChannel channel) {
        try {
            channel.configureBlocking(false);
            int n = channel.read(ByteBuffer.allocate(1));
            channel.configureBlocking(true);
            return n == 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Keeps {@code channel} for the next exchange with {@code port} of {@code box}, or closes it (full, or ended). */
    private static void keep(Sandbox.Interactive box, int port, SocketChannel channel) {
        synchronized (KEPT) {
            int all = KEPT.entrySet().stream().filter(e -> e.getKey().box() == box).mapToInt(e -> e.getValue().size())
                    .sum();
            ArrayDeque<Kept> kept = KEPT.computeIfAbsent(new Key(box, port), k -> new ArrayDeque<>());
            if (box.alive() && kept.size() < KEPT_PER_PORT && all < KEPT_PER_SANDBOX) {
                kept.addLast(new Kept(channel, System.nanoTime()));
                if (sweeper == null) { // once a second: what was unused for KEPT_MS, or is of an ended sandbox, closed
                    sweeper = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                            Thread.ofPlatform().daemon().name("crucible-kept-ports").factory());
                    sweeper.scheduleWithFixedDelay(SessionPorts::sweep, 1, 1, TimeUnit.SECONDS);
                }
                return;
            }
        }
        closeQuietly(channel);
    }

    private static void sweep() {
        List<SocketChannel> ended = new java.util.ArrayList<>();
        long oldest = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(KEPT_MS);
        synchronized (KEPT) {
            KEPT.entrySet().removeIf(e -> {
                boolean alive = e.getKey().box().alive();
                e.getValue().removeIf(k -> (!alive || k.sinceNs() - oldest < 0) && ended.add(k.channel()));
                return e.getValue().isEmpty();
            });
        }
        ended.forEach(SessionPorts::closeQuietly);
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // closed either way
        }
    }

    /** One connection into the session's sandbox: use of the session until closed or released. */
    public final class Connection implements AutoCloseable {
        private final Sandbox.Interactive box;
        private final SocketChannel channel;
        private final int port;
        private final boolean reused;
        private final AtomicBoolean closed = new AtomicBoolean();

        private Connection(Sandbox.Interactive box, SocketChannel channel, int port, boolean reused) {
            this.box = box;
            this.channel = channel;
            this.port = port;
            this.reused = reused;
        }

        /** Whether it was kept alive from an earlier exchange (its server may have let it go meanwhile). */
        public boolean reused() {
            return reused;
        }

        /** Hands it back to be kept: only after an exchange that ended cleanly, its answer read to its framed end. */
        public void release() {
            if (closed.compareAndSet(false, true)) {
                session.portConnections.decrementAndGet();
                session.touch();
                keep(box, port, channel);
            }
        }

        /** The port it is connected to. */
        public int port() {
            return port;
        }

        /** The connected socket (blocking). */
        public SocketChannel channel() {
            return channel;
        }

        /** Bytes went through: the session was used now. */
        public void used() {
            session.touch();
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                try {
                    channel.close();
                } catch (IOException e) {
                    // closed either way
                }
                session.portConnections.decrementAndGet();
                session.touch();
            }
        }
    }
}
