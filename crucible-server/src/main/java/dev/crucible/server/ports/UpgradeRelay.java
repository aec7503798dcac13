package dev.crucible.server.ports;

import dev.crucible.session.SessionPorts;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.io.AbstractConnection;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.FutureCallback;

/**
 * A connection upgraded through a port (a WebSocket, after the session's server answered {@code 101}): Jetty hands
 * the client's end point over once it has sent the {@code 101} (the request attribute Jetty's own WebSocket upgrade
 * uses), and bytes then go both ways as they come until either side ends; both ends are closed then. Client to
 * session: Jetty's fill callbacks; session to client: a virtual thread, one write at a time.
 */
final class UpgradeRelay extends AbstractConnection implements Connection.UpgradeTo {
    private final SessionPorts.Connection upstream;
    private final InputStream fromUpstream;
    private final OutputStream toUpstream;
    private final ByteBuffer buffer = BufferUtil.allocate(PortProxy.BUFFER);
    private final AtomicBoolean ended = new AtomicBoolean();

    /** @param rest the session's side as read so far (what came past its {@code 101} head first) */
    UpgradeRelay(EndPoint client, Executor executor, SessionPorts.Connection upstream,
            InputStream rest) throws IOException {
        super(client, executor);
        this.upstream = upstream;
        this.fromUpstream = rest;
        this.toUpstream = upstream.channel().socket().getOutputStream();
        upstream.channel().socket().setSoTimeout(0); // a WebSocket may be quiet for long: the session's end closes it
        client.setIdleTimeout(PortProxy.READ_TIMEOUT_MS);
    }

    /** Bytes the client sent behind its upgrade request, read by Jetty before the hand-over: the session's first. */
    @Override
    public void onUpgradeTo(ByteBuffer prefilled) {
        if (BufferUtil.hasContent(prefilled)) {
            try {
                write(prefilled);
            } catch (IOException e) {
                end();
            }
        }
    }

    @Override
    public void onOpen() {
        super.onOpen();
        Thread.ofVirtual().name("crucible-port-relay").start(this::down);
        fillInterested();
    }

    /** The client sent bytes: to the session's server, then wait for more. */
    @Override
    public void onFillable() {
        try {
            while (true) {
                BufferUtil.clear(buffer);
                int n = getEndPoint().fill(buffer);
                if (n < 0) {
                    end();
                    return;
                }
                if (n == 0) {
                    fillInterested();
                    return;
                }
                write(buffer);
            }
        } catch (IOException e) {
            end();
        }
    }

    private void write(ByteBuffer bytes) throws IOException {
        toUpstream.write(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining());
        toUpstream.flush();
        upstream.used();
    }

    /** The session's server to the client, one write finished before the next read. */
    private void down() {
        byte[] buf = new byte[PortProxy.BUFFER];
        try {
            int n;
            while ((n = fromUpstream.read(buf)) > 0) {
                FutureCallback written = new FutureCallback();
                getEndPoint().write(written, ByteBuffer.wrap(buf, 0, n));
                written.get();
                upstream.used();
            }
        } catch (Exception e) {
            // either side went away: the relay ends
        } finally {
            end();
        }
    }

    @Override
    public void onClose(Throwable cause) {
        super.onClose(cause);
        end();
    }

    private void end() {
        if (ended.compareAndSet(false, true)) {
            upstream.close();
            getEndPoint().close();
        }
    }
}
