package dev.crucible.cli;

import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A real HAProxy (Debian's) in front of replicas on loopback, for the ITs: round robin, retries with redispatch, and
 * HAProxy's default health check ({@code option httpchk GET /readyz}: HTTP/1.0, no Host header) with a tolerant
 * {@code fall 3}, so that one slow answer on a busy machine does not take a replica out. A test waits for the
 * balancer's own view of its servers ({@link #awaitUp}, read from its stats socket), never for a first good answer.
 */
final class Balancer implements AutoCloseable {
    private final Process process;
    private final Path socket;
    private final Path log;
    final int port;

    private Balancer(Process process, Path socket, Path log, int port) {
        this.process = process;
        this.socket = socket;
        this.log = log;
        this.port = port;
    }

    /** Starts HAProxy on {@code port} in front of {@code backends} (servers {@code r0}, {@code r1}, …). */
    static Balancer start(Path dir, int port, int... backends) throws IOException {
        Path socket = dir.resolve("haproxy.sock");
        StringBuilder cfg = new StringBuilder("""
                global
                    maxconn 2000
                    stats socket %s mode 600 level admin
                defaults
                    mode http
                    timeout connect 2s
                    timeout client 120s
                    timeout server 120s
                    retries 3
                    option redispatch
                frontend crucible
                    bind 127.0.0.1:%d
                    default_backend replicas
                backend replicas
                    balance roundrobin
                    option httpchk GET /readyz
                    timeout check 2s
                    default-server inter 300ms fall 3 rise 1
                """.formatted(socket, port));
        for (int i = 0; i < backends.length; i++) {
            cfg.append("    server r").append(i).append(" 127.0.0.1:").append(backends[i]).append(" check\n");
        }
        Path file = dir.resolve("haproxy.cfg");
        Files.writeString(file, cfg);
        Path log = dir.resolve("haproxy.log");
        Process p = new ProcessBuilder("/usr/sbin/haproxy", "-db", "-f", file.toString()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        return new Balancer(p, socket, log, port);
    }

    /**
     * Waits until HAProxy itself counts {@code count} servers UP (its checks passed), for up to 90 s.
     *
     * @throws AssertionError with HAProxy's view and log when it does not
     */
    void awaitUp(int count) throws IOException, InterruptedException {
        AtomicReference<Map<String, String>> view = new AtomicReference<>(Map.of());
        try {
            await("haproxy counting " + count + " servers up").atMost(Duration.ofSeconds(90)).pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(50)).until(() -> {
                        if (!process.isAlive()) {
                            throw new AssertionError("haproxy exited: " + Files.readString(log));
                        }
                        Map<String, String> now = servers();
                        view.set(now);
                        return now.values().stream().filter("UP"::equals).count() >= count;
                    });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("haproxy counts fewer than " + count + " servers up: " + view.get() + "\n"
                    + Files.readString(log), e);
        }
    }

    /** Each server of the backend and its state as HAProxy sees it ({@code UP}, {@code DOWN}, …); empty before it runs. */
    Map<String, String> servers() {
        Map<String, String> out = new TreeMap<>();
        String stat;
        try {
            stat = command("show stat");
        } catch (IOException e) {
            return out; // not listening yet
        }
        List<String> header = new ArrayList<>();
        for (String line : stat.split("\n")) {
            String[] f = line.split(",", -1);
            if (line.startsWith("# ")) {
                header = List.of(line.substring(2).split(",", -1));
            } else if (!header.isEmpty() && f.length > 1 && f[0].equals("replicas")
                    && !f[1].equals("BACKEND") && !f[1].equals("FRONTEND")) {
                out.put(f[1], f[header.indexOf("status")]);
            }
        }
        return out;
    }

    private String command(String line) throws IOException {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            channel.write(ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.US_ASCII)));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuffer buffer = ByteBuffer.allocate(8192);
            while (channel.read(buffer) >= 0) {
                out.write(buffer.array(), 0, buffer.position());
                buffer.clear();
            }
            return out.toString(StandardCharsets.US_ASCII);
        }
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
    }
}
