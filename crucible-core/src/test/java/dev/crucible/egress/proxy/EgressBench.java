package dev.crucible.egress.proxy;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.egress.policy.EgressPolicy;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;

/**
 * Prints what the egress proxy costs (a benchmark: run on purpose, never by the test suite): curl downloading
 * {@code MB} megabytes from a loopback origin directly and through the proxy (CONNECT tunnel and forward GET), and
 * the time of a small first request each way. Usage: {@code java -cp classes:test-classes
 * dev.crucible.egress.proxy.EgressBench [MB] [ROUNDS]}.
 */
final class EgressBench {
    private EgressBench() {}

    public static void main(String[] args) throws Exception {
        int megabytes = args.length > 0 ? Integer.parseInt(args[0]) : 50;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        byte[] big = new byte[megabytes << 20];
        HttpServer origin = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 0);
        origin.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        origin.createContext("/", exchange -> {
            byte[] body = exchange.getRequestURI().getPath().equals("/big") ? big : new byte[16];
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        origin.start();
        int port = origin.getAddress().getPort();
        EgressLimits limits = EgressLimits.defaults().withMaxBytes(Long.MAX_VALUE);
        try (EgressProxy proxy = EgressProxy.create(EgressPolicy.parse("127.0.0.1:" + port), EgressResolver.system(),
                limits, InstantSource.system())) {
            String via = "http://127.0.0.1:" + proxy.listenLoopback().getPort();
            String url = "http://127.0.0.1:" + port;
            List<String> direct = List.of("--noproxy", "*");
            List<String> tunnel = List.of("--proxy", via, "--proxytunnel");
            List<String> forward = List.of("--proxy", via);
            double base = best(rounds, url + "/big", direct, "%{speed_download}");
            double tunnelled = best(rounds, url + "/big", tunnel, "%{speed_download}");
            double forwarded = best(rounds, url + "/big", forward, "%{speed_download}");
            System.out.printf("download %d MB: direct %.0f MB/s, CONNECT %.0f MB/s (%.2f), forward %.0f MB/s (%.2f)%n",
                    megabytes, base / 1e6, tunnelled / 1e6, tunnelled / base, forwarded / 1e6, forwarded / base);
            double first = -best(rounds, url + "/small", direct, "-%{time_total}");
            double firstTunnel = -best(rounds, url + "/small", tunnel, "-%{time_total}");
            System.out.printf("small request (best of %d): direct %.2f ms, CONNECT %.2f ms (+%.2f ms)%n", rounds,
                    first * 1e3, firstTunnel * 1e3, (firstTunnel - first) * 1e3);
        } finally {
            origin.stop(0);
        }
    }

    /** The largest of {@code rounds} values of curl's {@code format} (negated times make "largest" the fastest). */
    private static double best(int rounds, String url, List<String> options, String format) throws Exception {
        double best = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < rounds; i++) {
            List<String> command = new ArrayList<>(List.of("curl", "-sS", "-o", "/dev/null", "-w", format));
            command.addAll(options);
            command.add(url);
            Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            String out = new String(process.getInputStream().readAllBytes()).trim();
            if (process.waitFor() != 0) {
                throw new IllegalStateException("curl failed: " + command);
            }
            best = Math.max(best, Double.parseDouble(out));
        }
        return best;
    }
}
