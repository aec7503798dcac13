package dev.crucible.cli.bench;

import dev.crucible.cli.support.CliSupport;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import tools.jackson.databind.JsonNode;

/**
 * Drives a running server over HTTP with N concurrent clients and, in the same run, the same number of bare
 * interpreter spawns from this JVM at the same concurrency, in alternating rounds so that both see the same machine.
 */
final class HttpBench {
    static final List<String> HOSTILE = List.of(
            "{\"language\":\"python\",\"code\":\"while True: pass\",\"limits\":{\"timeout_ms\":1000}}",
            "{\"language\":\"python\",\"code\":\"import os\\nwhile True:\\n    try: os.fork()\\n    except OSError: pass\","
                    + "\"limits\":{\"timeout_ms\":1000}}",
            "{\"language\":\"python\",\"code\":\"x = []\\nwhile True: x.append(bytearray(1 << 24))\"}",
            "{\"language\":\"bash\",\"code\":\"yes flood\"}",
            "{\"language\":\"javascript\",\"code\":\"for(;;){}\",\"limits\":{\"timeout_ms\":1000}}");

    record Phase(long[] latencies, double seconds) {
        double throughput() {
            return latencies.length / seconds;
        }
    }

    private final URI execute;
    private final String token;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    final Map<String, AtomicInteger> statuses = new ConcurrentHashMap<>();
    final AtomicInteger serverErrors = new AtomicInteger();
    final AtomicInteger rejected = new AtomicInteger();

    HttpBench(String url, String token) {
        this.execute = URI.create(url.replaceAll("/+$", "") + "/v1/execute");
        this.token = token;
    }

    JsonNode health() throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(execute.resolve("/healthz")).GET();
        return CliSupport.json().readTree(client.send(b.build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    /** One request; returns false for a refused (429/503) one, which is retried by the caller. */
    boolean post(String body) throws IOException, InterruptedException {
        int code;
        String answer;
        if (execute.getScheme().equals("http")) { // a blocking keep-alive connection per worker thread
            BenchConnection.Response r = postPlain(body.getBytes(StandardCharsets.UTF_8));
            code = r.status();
            answer = r.body();
        } else {
            HttpRequest.Builder b = HttpRequest.newBuilder(execute).header("Content-Type", "application/json")
                    .timeout(Duration.ofSeconds(120)).POST(HttpRequest.BodyPublishers.ofString(body));
            if (token != null) {
                b.header("Authorization", "Bearer " + token);
            }
            HttpResponse<String> r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
            code = r.statusCode();
            answer = r.body();
        }
        if (code == 429 || code == 503) {
            rejected.incrementAndGet();
            return false;
        }
        if (code >= 500) {
            serverErrors.incrementAndGet();
        }
        String status = code == 200 ? CliSupport.json().readTree(answer).get("status").asString() : "http_" + code;
        statuses.computeIfAbsent(status, k -> new AtomicInteger()).incrementAndGet();
        return true;
    }

    /** Keep-alive connections not in use: at most one per concurrent worker, kept across phases. */
    private final ConcurrentLinkedQueue<BenchConnection> idle =
            new ConcurrentLinkedQueue<>();

    /**
     * On an idle connection, or a new one. An idle one the server closed meanwhile (between phases, past its idle
     * timeout) fails before any byte of the answer: the others are likely closed too, so all go, and the request is
     * sent once more on a new connection. Any other failure is the caller's: a request the server may have run is
     * never sent twice.
     */
    private BenchConnection.Response postPlain(byte[] body) throws IOException {
        BenchConnection c = idle.poll();
        if (c != null) {
            try {
                return keep(c, c.post(execute.getRawPath(), token, body));
            } catch (BenchConnection.Stale e) {
                c.close();
                close();
            } catch (IOException e) {
                c.close();
                throw e;
            }
        }
        BenchConnection fresh = new BenchConnection(execute);
        try {
            return keep(fresh, fresh.post(execute.getRawPath(), token, body));
        } catch (IOException e) {
            fresh.close();
            throw e;
        }
    }

    private BenchConnection.Response keep(BenchConnection c, BenchConnection.Response r) {
        if (c.reusable()) {
            idle.add(c);
        } else {
            c.close();
        }
        return r;
    }

    /** Closes the idle connections. */
    void close() {
        for (BenchConnection c; (c = idle.poll()) != null; ) {
            c.close();
        }
    }

    /** Runs {@code count} tasks on {@code concurrency} threads and records each one's latency. */
    static Phase measure(int count, int concurrency, Task task) throws Exception {
        long[] latencies = new long[count];
        AtomicInteger next = new AtomicInteger();
        AtomicLong failures = new AtomicLong();
        long t0 = System.nanoTime();
        try (ExecutorService pool = Executors.newFixedThreadPool(concurrency)) {
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < concurrency; w++) {
                workers.add(pool.submit(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < count) {
                        long[] began = new long[1];
                        task.run(i, () -> began[0] = System.nanoTime());
                        latencies[i] = System.nanoTime() - began[0];
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get();
            }
        }
        return new Phase(latencies, (System.nanoTime() - t0) / 1e9);
    }

    /** One request; calls {@code start} when the timed part begins (after any think time). */
    interface Task {
        void run(int i, Runnable start) throws Exception;
    }

    static void report(PrintWriter out, String name, Phase p) {
        out.printf("%-24s %8.2f %8.2f %8.2f %10.1f%n", name, BenchCommand.pct(p.latencies(), 50),
                BenchCommand.pct(p.latencies(), 90), BenchCommand.pct(p.latencies(), 99), p.throughput());
    }

    static Phase merge(List<Phase> phases) {
        int n = phases.stream().mapToInt(p -> p.latencies().length).sum();
        long[] all = new long[n];
        int at = 0;
        double seconds = 0;
        for (Phase p : phases) {
            System.arraycopy(p.latencies(), 0, all, at, p.latencies().length);
            at += p.latencies().length;
            seconds += p.seconds();
        }
        return new Phase(all, seconds);
    }

    Map<String, Integer> statusCounts() {
        Map<String, Integer> m = new TreeMap<>();
        statuses.forEach((k, v) -> m.put(k, v.get()));
        return m;
    }

}
