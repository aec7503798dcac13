package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
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
        } catch (ConnectException e) {
            throw new RequestException(ErrorCode.PORT_NOT_LISTENING, "nothing listens on port " + port + " in session "
                    + id() + " (a server must listen on 127.0.0.1 or 0.0.0.0 there; GET /v1/sessions/" + id()
                    + " lists the ports that do)");
        } catch (IOException e) {
            throw new RequestException(ErrorCode.PORT_NOT_LISTENING, "cannot reach port " + port + " in session "
                    + id() + ": " + e.getMessage());
        }
        session.portConnections.incrementAndGet();
        return new Connection(channel, port);
    }

    /** One connection into the session's sandbox: use of the session until closed. */
    public final class Connection implements AutoCloseable {
        private final SocketChannel channel;
        private final int port;
        private final AtomicBoolean closed = new AtomicBoolean();

        private Connection(SocketChannel channel, int port) {
            this.channel = channel;
            this.port = port;
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
