package dev.crucible.cli.bench;

import dev.crucible.Crucible;
import dev.crucible.server.CrucibleServer;
import dev.crucible.server.ServerConfig;
import dev.crucible.server.services.Services;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionPorts;
import dev.crucible.session.process.CommandRequest;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code crucible bench --ports}: a server and an engine of this process, one Python session serving its workspace
 * with {@code python3 -m http.server}; a small GET through the port proxy ({@code /v1/sessions/{id}/ports/…}, on a
 * kept-alive connection) against the same GET on a socket made in the session's own network namespace (what the proxy itself
 * does upstream: the baseline the issue names), p50 and the ratio; then the same for a 50 MB file, as throughput.
 */
final class PortBench {
    private static final int PORT = 8000;
    private static final int BIG = 50 << 20;

    int run(PrintWriter out, Crucible engine, int iterations, int warmup) throws Exception {
        Path data = Files.createTempDirectory("crucible-bench-ports-");
        data.toFile().setReadable(true, false);
        data.toFile().setExecutable(true, false);
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(data).withPool(Map.of());
        try (Services services = Services.start(engine, config.sessions(), config.turns(), (String) null);
             CrucibleServer server = CrucibleServer.start(config, services)) {
            SessionManager sessions = services.sessions();
            String id = sessions.create("", new SessionManager.CreateRequest("python", null, null, null)).id();
            sessions.command("", id, CommandRequest.shell("head -c " + BIG + " /dev/zero > big.bin; echo hi > small.txt"));
            sessions.processes("", id).start(new CommandRequest("python3 -m http.server " + PORT + " --bind 127.0.0.1",
                    null, null, null, null, null, null, true));
            awaitListening(sessions.ports("", id));
            String base = "/v1/sessions/" + id + "/ports/" + PORT + "/";
            KeptAlive client = new KeptAlive(server.port()); // the same raw client as the baseline: only the hop differs
            SessionBench.Step proxied = () -> expect(client.get(base + "small.txt"), 3);
            SessionBench.Step direct = () -> expect(direct(sessions.ports("", id), "/small.txt"), 3);
            SessionBench.Step floor = () -> client.get("/livez");
            SessionBench.time(warmup, floor);
            SessionBench.time(warmup, proxied);
            SessionBench.time(warmup, direct);
            List<long[]> p = new ArrayList<>();
            List<long[]> d = new ArrayList<>();
            List<long[]> f = new ArrayList<>();
            for (int round = 0; round < 5; round++) { // alternating, so that noise hits both
                f.add(SessionBench.time(iterations / 5, floor));
                d.add(SessionBench.time(iterations / 5, direct));
                p.add(SessionBench.time(iterations / 5, proxied));
            }
            long[] pl = merge(p);
            long[] dl = merge(d);
            long[] fl = merge(f);
            out.printf("crucible bench --ports: GET of a 3-byte file from python3 -m http.server in a session%n");
            out.printf("%-44s %8s %8s %8s%n", "", "p50 ms", "p90 ms", "p99 ms");
            out.printf("%-44s %8.3f %8.3f %8.3f%n", "GET /livez (this server's HTTP floor)", SessionBench.ms(fl, 50),
                    SessionBench.ms(fl, 90), SessionBench.ms(fl, 99));
            out.printf("%-44s %8.3f %8.3f %8.3f%n", "direct (a socket in the session's namespace)", SessionBench.ms(dl, 50),
                    SessionBench.ms(dl, 90), SessionBench.ms(dl, 99));
            out.printf("%-44s %8.3f %8.3f %8.3f%n", "through the port proxy (kept-alive)", SessionBench.ms(pl, 50),
                    SessionBench.ms(pl, 90), SessionBench.ms(pl, 99));
            out.printf("proxy p50 / direct p50: %.2f (goal <= 1.5)%n", SessionBench.ms(pl, 50) / SessionBench.ms(dl, 50));
            double directMb = 0;
            double proxiedMb = 0;
            for (int round = 0; round < 3; round++) {
                long t0 = System.nanoTime();
                expect(direct(sessions.ports("", id), "/big.bin"), BIG);
                long t1 = System.nanoTime();
                expect(client.get(base + "big.bin"), BIG);
                long t2 = System.nanoTime();
                directMb = Math.max(directMb, BIG / 1e6 / ((t1 - t0) / 1e9));
                proxiedMb = Math.max(proxiedMb, BIG / 1e6 / ((t2 - t1) / 1e9));
            }
            out.printf("50 MB GET, best of 3: direct %.0f MB/s, through the proxy %.0f MB/s; proxy / direct: %.2f"
                    + " (goal >= 0.8)%n", directMb, proxiedMb, proxiedMb / directMb);
            client.close();
            sessions.delete("", id);
        } finally {
            out.flush();
        }
        return 0;
    }

    /** A raw HTTP/1.1 client on one kept-alive connection to the server, reading bodies by Content-Length. */
    private static final class KeptAlive implements AutoCloseable {
        private final Socket socket;
        private final InputStream in;

        KeptAlive(int port) throws IOException {
            socket = new Socket(InetAddress.getLoopbackAddress(), port);
            socket.setTcpNoDelay(true);
            in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
        }

        long get(String path) throws IOException {
            socket.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            String head = head(in);
            if (!head.startsWith("HTTP/1.1 200")) {
                throw new IOException("GET " + path + " answered " + head.lines().findFirst().orElse(""));
            }
            long length = head.lines().filter(l -> l.toLowerCase(Locale.ROOT).startsWith("content-length:"))
                    .mapToLong(l -> Long.parseLong(l.substring(15).strip())).findFirst()
                    .orElseThrow(() -> new IOException("no Content-Length in " + head));
            byte[] buf = new byte[64 * 1024];
            long left = length;
            while (left > 0) {
                int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                if (n < 0) {
                    throw new IOException("the server closed the connection " + left + " bytes short");
                }
                left -= n;
            }
            return length;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** A response head, read byte by byte up to its blank line. */
    private static String head(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            head.write(b);
            byte[] h = head.toByteArray();
            int n = h.length;
            if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                return head.toString(StandardCharsets.ISO_8859_1);
            }
        }
        throw new IOException("the connection ended in a response head");
    }

    /** The same GET on a fresh socket made in the session's namespace, {@code Connection: close}: the body's size. */
    private static long direct(SessionPorts ports, String path) throws IOException {
        try (SessionPorts.Connection c = ports.connect(PORT)) {
            var socket = c.channel().socket();
            socket.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: localhost:" + PORT
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
            head(in); // as the proxy reads it
            return drain(in);
        }
    }

    private static long drain(InputStream in) throws IOException {
        byte[] buf = new byte[64 * 1024];
        long total = 0;
        int n;
        while ((n = in.read(buf)) > 0) {
            total += n;
        }
        return total;
    }

    private static void expect(long got, long want) throws IOException {
        if (got != want) {
            throw new IOException("got " + got + " bytes, not " + want);
        }
    }

    private static void awaitListening(SessionPorts ports) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (ports.list().stream().noneMatch(p -> p.port() == PORT)) {
            if (System.nanoTime() > deadline) {
                throw new IOException("python3 -m http.server did not listen on " + PORT + " in the session in 60 s");
            }
            Thread.sleep(20);
        }
    }

    private static long[] merge(List<long[]> parts) {
        long[] all = parts.stream().flatMapToLong(Arrays::stream).sorted().toArray();
        return all;
    }
}
