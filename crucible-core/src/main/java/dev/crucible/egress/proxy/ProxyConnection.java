package dev.crucible.egress.proxy;

import dev.crucible.egress.address.AddressClass;
import dev.crucible.egress.address.AddressRules;
import dev.crucible.egress.address.Target;
import dev.crucible.egress.policy.EgressReason;
import dev.crucible.os.Splice;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;

/**
 * One client connection to an {@link EgressProxy}: read the head, judge it (list, resolve once, check every address),
 * connect to a checked address, relay; or refuse with a one-line reason. Runs on its own platform thread.
 */
final class ProxyConnection implements Runnable {
    private static final byte[] ESTABLISHED =
            "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);

    private final EgressProxy proxy;
    private final SocketChannel client;
    private final boolean admitted;
    private final ServerSocketChannel listener;
    private volatile SocketChannel upstream;
    private volatile long lastActive = System.nanoTime();
    private volatile EgressEnding forced;
    /** Set once the relay has ended: a close from outside after that cut nothing. */
    private volatile boolean relayEnded;

    ProxyConnection(EgressProxy proxy, SocketChannel client, boolean admitted, ServerSocketChannel listener) {
        this.proxy = proxy;
        this.client = client;
        this.admitted = admitted;
        this.listener = listener;
    }

    /** Whether the client came through {@code listener}. */
    boolean acceptedOn(ServerSocketChannel listener) {
        return this.listener == listener;
    }

    @Override
    public void run() {
        try (client) {
            RequestHead head;
            try {
                head = RequestHead.read(client, proxy.limits().maxHeadBytes(), this::touch);
            } catch (Refusal refusal) {
                refuse(null, refusal);
                return;
            }
            try {
                serve(head);
            } catch (Refusal refusal) {
                refuse(head, refusal);
            }
        } catch (IOException e) {
            // the client went away, or the watchdog closed a silent connection: nothing to answer
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            proxy.finished(this, admitted);
        }
    }

    private void serve(RequestHead head) throws IOException, InterruptedException, Refusal {
        if (!admitted) {
            throw new Refusal(EgressReason.CONNECTION_CAP, "at most " + proxy.limits().maxConnections());
        }
        Target target = head.target();
        EgressReason listed = proxy.policy().judge(target);
        if (!listed.allowed()) {
            throw new Refusal(listed, null);
        }
        if (proxy.budget().spent()) {
            throw new Refusal(EgressReason.BYTE_CAP, null);
        }
        List<InetAddress> addresses = resolve(target);
        for (InetAddress address : addresses) {
            AddressClass kind = AddressRules.classify(address);
            if (kind.forbidden() && !proxy.policy().listsAddress(address, target.port())) {
                throw new Refusal(EgressReason.FORBIDDEN_ADDRESS,
                        address.getHostAddress() + " is " + kind.wireName().replace('_', ' '), address, kind);
            }
        }
        try (SocketChannel connected = connect(addresses, target.port())) {
            Instant judged = proxy.now(); // the decision's time: recorded when the connection ends
            upstream = connected;
            if (forced != null) {
                return;
            }
            InetAddress address = ((InetSocketAddress) connected.getRemoteAddress()).getAddress();
            Relay relay = new Relay(client, connected, proxy.budget(), this::touch);
            boolean started = true;
            if (head.isConnect()) {
                write(ByteBuffer.wrap(ESTABLISHED));
            } else {
                started = relay.send(ByteBuffer.wrap(head.originHead()));
            }
            if (started && head.rest().hasRemaining()) {
                started = relay.send(head.rest());
            }
            EgressEnding ending = started ? relay.run(!head.isConnect()) : relay.ending();
            relayEnded = true;
            // a close from outside (the sockets shut down) shows in the relay as an end or a failed write: the
            // close is the cause; one that came after the relay had ended on its own (the sandbox ended just after
            // its program read the last byte) changed nothing, and a spent budget is the budget's
            EgressEnding cause = forced != null && ending != EgressEnding.BYTE_CAP ? forced : ending;
            proxy.record(new EgressDecision(judged, EgressReason.ALLOWED, head.method(), target.host(),
                    target.port(), address, AddressRules.classify(address), cause,
                    relay.sent.get(), relay.received.get()), relay.sent.get(), relay.received.get());
        }
    }

    private List<InetAddress> resolve(Target target) throws Refusal {
        if (target.address() != null) {
            return List.of(target.address());
        }
        try {
            List<InetAddress> addresses = proxy.resolver().resolve(target.host());
            if (addresses.isEmpty()) {
                throw new UnknownHostException(target.host());
            }
            return addresses;
        } catch (UnknownHostException e) {
            throw new Refusal(EgressReason.UNRESOLVABLE, null);
        }
    }

    private SocketChannel connect(List<InetAddress> addresses, int port) throws Refusal {
        int timeout = Math.toIntExact(proxy.limits().connectTimeout().toMillis());
        for (InetAddress address : addresses) {
            SocketChannel channel = null;
            try {
                channel = SocketChannel.open();
                channel.socket().connect(new InetSocketAddress(address, port), timeout);
                return channel;
            } catch (IOException e) {
                closeQuietly(channel);
            }
        }
        throw new Refusal(EgressReason.UNREACHABLE, null);
    }

    private void refuse(RequestHead head, Refusal refusal) throws IOException {
        Target target = head == null ? null : head.target();
        String line = "crucible egress refused " + (target == null ? "the request" : target.authority()) + ": "
                + refusal.reason.explanation() + (refusal.detail == null ? "" : " (" + refusal.detail + ")");
        line = line.replaceAll("[^\\x20-\\x7e]", "?");
        byte[] body = (line + "\n").getBytes(StandardCharsets.ISO_8859_1);
        String response = "HTTP/1.1 " + refusal.reason.status() + " " + line + "\r\n"
                + "Content-Type: text/plain; charset=us-ascii\r\n"
                + "Content-Length: " + body.length + "\r\n"
                + "X-Crucible-Egress: " + refusal.reason.wireName() + "\r\n"
                + "Connection: close\r\n\r\n";
        proxy.record(new EgressDecision(proxy.now(), refusal.reason, head == null ? null : head.method(),
                target == null ? null : target.host(), target == null ? 0 : target.port(), refusal.address,
                refusal.addressClass, null, 0, 0), 0, 0);
        write(ByteBuffer.wrap(response.getBytes(StandardCharsets.ISO_8859_1)));
        write(ByteBuffer.wrap(body));
    }

    private void write(ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            client.write(bytes);
            touch();
        }
    }

    private void touch() {
        lastActive = System.nanoTime();
    }

    /** Closes both sides when nothing moved for {@code idleNanos}; true when it did. */
    boolean closeIfIdle(long now, long idleNanos) {
        if (now - lastActive > idleNanos) {
            close(EgressEnding.IDLE_TIMEOUT);
            return true;
        }
        return false;
    }

    void close(EgressEnding why) {
        if (forced == null && !relayEnded) {
            forced = why;
        }
        Splice.shutDown(client); // shut down, not only closed: a relay's splice holds descriptors of its own
        Splice.shutDown(upstream);
    }

    private static void closeQuietly(SocketChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing left to do with it
            }
        }
    }
}
