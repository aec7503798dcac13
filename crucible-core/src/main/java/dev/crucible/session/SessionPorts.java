package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.session.ports.KeptConnections;
import dev.crucible.session.spec.PortInfo;
import java.io.IOException;
import java.net.ConnectException;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The ports of one session (issue 27): what listens in its running sandbox, and connections to it made by the server
 * in the sandbox's own network namespace (a session's servers are reached; the host's loopback cannot even be named).
 * An open connection is use of the session.
 *
 * <p>Connections a caller hands back ({@link Connection#release()}: its exchange ended cleanly, the answer read to its
 * end) are kept alive for the next request to the same port of the same sandbox ({@link #reuse}, in
 * {@link KeptConnections}). A kept connection is no use of the session (it may go idle).
 */
public final class SessionPorts {
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
            while ((kept = KeptConnections.take(box, port)) != null) {
                if (KeptConnections.quiet(kept)) {
                    session.touch();
                    session.portConnections.incrementAndGet();
                    return new Connection(box, kept, port, true);
                }
                KeptConnections.closeQuietly(kept);
            }
        }
        return connect(port);
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
                KeptConnections.keep(box, port, channel);
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
