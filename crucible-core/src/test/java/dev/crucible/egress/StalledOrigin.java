package dev.crucible.egress;

import static org.awaitility.Awaitility.await;

import dev.crucible.testhost.NetnsHost;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;

/**
 * An egress origin that stalls, on a {@link NetnsHost}: it accepts every connection and then stops.
 * {@link Stall#SILENT} reads nothing and sends nothing (a TLS handshake, a request that never gets an answer); {@link Stall#MID_RESPONSE}
 * reads the request head, sends a response head promising a megabyte and the first bytes of its body, and stops there.
 * For the fault tests: whatever waits on it must end by its own deadline, and the proxy must let go of the connection.
 */
public final class StalledOrigin implements AutoCloseable {
    /** Where the origin stops. */
    public enum Stall { SILENT, MID_RESPONSE }

    private static final byte[] PARTIAL = ("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
            + "Content-Length: 1048576\r\nConnection: close\r\n\r\n" + "x".repeat(1000))
            .getBytes(StandardCharsets.US_ASCII);

    private final ServerSocketChannel listener;
    private final NetnsHost host;
    private final Stall stall;
    private final List<SocketChannel> stalled = new CopyOnWriteArrayList<>();

    private StalledOrigin(ServerSocketChannel listener, NetnsHost host, Stall stall) {
        this.listener = listener;
        this.host = host;
        this.stall = stall;
    }

    /** Listens on {@code on}'s address, a free port, and stalls every connection as {@code stall} says. */
    public static StalledOrigin start(NetnsHost on, Stall stall) throws IOException {
        StalledOrigin origin = new StalledOrigin(on.listen(), on, stall);
        Thread.ofPlatform().daemon().name("crucible-stalled-origin").start(origin::accept);
        return origin;
    }

    /** The operator's allowlist entry: {@code HOST:PORT}, the private address listed verbatim. */
    public String allowEntry() {
        return host.host() + ":" + port();
    }

    private int port() {
        try {
            return ((InetSocketAddress) listener.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A Python program that waits on this origin through a sandbox's proxy: a CONNECT tunnel whose TLS hello is never
     * answered ({@link Stall#SILENT}), or a forward GET whose body never ends ({@link Stall#MID_RESPONSE}). It prints
     * the proxy's status line once through, and {@code answered} should the origin ever answer.
     */
    public String waitingProgram() {
        String program = switch (stall) {
            case SILENT -> """
                    import socket
                    s = socket.create_connection(('127.0.0.1', 3128), timeout=600)
                    s.sendall(b'CONNECT TARGET HTTP/1.1\\r\\nHost: TARGET\\r\\n\\r\\n')
                    print(s.recv(4096).split(b'\\r\\n')[0].decode(), flush=True)
                    s.sendall(b'\\x16\\x03\\x01 a TLS hello that is never answered')
                    s.recv(1)
                    print('answered')
                    """;
            case MID_RESPONSE -> """
                    import urllib.request
                    r = urllib.request.urlopen('http://TARGET/', timeout=600)
                    print('HTTP/1.1', r.status, flush=True)
                    r.read()
                    print('answered')
                    """;
        };
        return program.replace("TARGET", allowEntry());
    }

    /** How many connections have reached their stall. */
    public int stalled() {
        return stalled.size();
    }

    /**
     * Waits until the peer (the proxy) has let go of every stalled connection, at most {@code bound} in all: the origin
     * reads to the end of the stream (the peer's FIN), and no process on this machine holds the peer's end any more
     * (the kernel lists it with no inode, or not at all). The FIN alone does not tell: a proxy that only shut its
     * side for writing still holds the socket, a thread and a place under its cap; and a byte sent to tell would be
     * taken by a proxy still reading, or would make it notice its client is gone.
     *
     * @return how many connections the peer still held when the bound passed
     */
    public int heldAfter(Duration bound) throws IOException, InterruptedException {
        long end = System.nanoTime() + bound.toNanos();
        int held = 0;
        for (SocketChannel connection : stalled) {
            if (!closedByPeer(connection, end)) {
                held++;
            }
        }
        return held;
    }

    private boolean closedByPeer(SocketChannel connection, long end) throws IOException, InterruptedException {
        InputStream in = connection.socket().getInputStream();
        byte[] buffer = new byte[64 * 1024];
        try {
            do {
                int left = (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()));
                connection.socket().setSoTimeout(left);
            } while (in.read(buffer) >= 0);
        } catch (SocketTimeoutException e) {
            return false; // not even shut for writing
        } catch (IOException e) {
            // reset: the peer closed with bytes unread; whether its socket is gone is told below
        }
        int peerPort = ((InetSocketAddress) connection.getRemoteAddress()).getPort();
        try {
            // on this thread: the socket tables are read through /proc/thread-self
            await("no process holding the peer's end from port " + peerPort).pollInSameThread()
                    .atMost(Duration.ofNanos(Math.max(end - System.nanoTime(), 1_000_000))).pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(20)).until(() -> !heldHere(peerPort, port()));
            return true;
        } catch (ConditionTimeoutException e) {
            return false;
        }
    }

    /**
     * Whether a process on this machine holds a TCP socket from {@code localPort} to {@code remotePort}: the kernel's
     * table lists it with its inode, 0 once closed by its owner (an orphan on its way out, or TIME_WAIT). Read by a
     * thread of this machine's namespace; the JDK's sockets are IPv6 ones, so both tables.
     */
    private static boolean heldHere(int localPort, int remotePort) throws IOException {
        // sl local_address rem_address st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...; ports in hex
        for (String table : List.of("tcp", "tcp6")) {
            for (String line : Files.readAllLines(Path.of("/proc/thread-self/net", table))) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length > 9 && fields[1].endsWith(String.format(":%04X", localPort))
                        && fields[2].endsWith(String.format(":%04X", remotePort)) && !fields[9].equals("0")) {
                    return true;
                }
            }
        }
        return false;
    }

    private void accept() {
        while (listener.isOpen()) {
            try {
                SocketChannel connection = listener.accept();
                Thread.ofVirtual().start(() -> stallOn(connection));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void stallOn(SocketChannel connection) {
        try {
            if (stall == Stall.MID_RESPONSE) {
                readHead(connection);
                ByteBuffer partial = ByteBuffer.wrap(PARTIAL);
                while (partial.hasRemaining()) {
                    connection.write(partial);
                }
            }
            stalled.add(connection);
        } catch (IOException e) {
            closeQuietly(connection);
        }
    }

    private static void readHead(SocketChannel connection) throws IOException {
        StringBuilder head = new StringBuilder();
        ByteBuffer one = ByteBuffer.allocate(1);
        while (!head.toString().endsWith("\r\n\r\n")) {
            one.clear();
            if (connection.read(one) < 0) {
                throw new IOException("the request ended before its head did");
            }
            head.append((char) one.get(0));
        }
    }

    /** Stops listening and closes every connection. */
    @Override
    public void close() {
        closeQuietly(listener);
        stalled.forEach(StalledOrigin::closeQuietly);
    }

    private static void closeQuietly(Closeable resource) {
        try {
            resource.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }
}
