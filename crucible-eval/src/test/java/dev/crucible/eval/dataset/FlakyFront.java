package dev.crucible.eval.dataset;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.crucible.error.RequestException;
import dev.crucible.eval.Judge;
import dev.crucible.exec.ExecuteRequest;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The HTTP API of /v1/execute and /v1/evaluate over the real engine, with the failures a cluster has between a batch
 * client and a sandbox injected on purpose: a balancer's 502/503, a full queue's 429, an answer lost after the
 * program ran (the replica died while answering), a refused token. Crucible's own server cannot be had in this module
 * (it depends on it); {@code ClusterIT} drives the real one behind a real balancer.
 */
final class FlakyFront implements AutoCloseable {
    /** What to do with one request. */
    enum Fault { NONE, HTTP_502, HTTP_503, HTTP_429, RAN_THEN_DROPPED, DROPPED, HTTP_401 }

    private final HttpServer server;
    private final Judge judge;
    private volatile Function<String, Fault> plan = body -> Fault.NONE;
    /** How many times each program (by its body) reached a sandbox. */
    final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    final AtomicInteger requests = new AtomicInteger();
    /** What /healthz answers. */
    volatile String health = "{\"status\":\"ok\",\"max_running\":3,\"max_queued\":3}";

    FlakyFront(Judge judge) throws IOException {
        this.judge = judge;
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/healthz", ex -> answer(ex, 200, health));
        server.createContext("/v1/runtimes", ex -> answer(ex, 200, "[]"));
        server.createContext("/v1/", this::judge);
        server.start();
    }

    URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** The fault for each request, from its body (a function of the sample, so a test can aim at one). */
    void plan(Function<String, Fault> faults) {
        this.plan = faults;
    }

    private void judge(HttpExchange ex) throws IOException {
        requests.incrementAndGet();
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        Fault fault = plan.apply(body);
        switch (fault) {
            case HTTP_502 -> answer(ex, 502, "<html>502 Bad Gateway</html>");
            case HTTP_503 -> answer(ex, 503, "{\"error\":{\"code\":\"shutting_down\",\"message\":\"draining\"}}");
            case HTTP_429 -> {
                ex.getResponseHeaders().add("Retry-After", "0");
                answer(ex, 429, "{\"error\":{\"code\":\"too_many_requests\",\"message\":\"queue full\"}}");
            }
            case HTTP_401 -> answer(ex, 401, "{\"error\":{\"code\":\"unauthorized\",\"message\":\"bad token\"}}");
            case DROPPED -> ex.close(); // no status line: the client sees the connection end
            case NONE, RAN_THEN_DROPPED -> {
                String answer;
                try {
                    answer = run(ex.getRequestURI().getPath(), body);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    ex.close();
                    return;
                } catch (RequestException e) {
                    answer(ex, e.code().httpStatus(), Dataset.JSON.writeValueAsString(Map.of("error",
                            Map.of("code", e.code().wireName(), "message", e.getMessage()))));
                    return;
                }
                runs.computeIfAbsent(body, b -> new AtomicInteger()).incrementAndGet();
                if (fault == Fault.RAN_THEN_DROPPED) {
                    ex.close();
                } else {
                    answer(ex, 200, answer);
                }
            }
        }
    }

    private String run(String path, String body) throws InterruptedException {
        if (path.equals("/v1/execute")) {
            return Dataset.JSON.writeValueAsString(judge.executor().execute(Dataset.JSON.readValue(body,
                    ExecuteRequest.class)));
        }
        return Dataset.JSON.writeValueAsString(judge.evaluate(Dataset.JSON.readValue(body, Judge.Request.class)));
    }

    private static void answer(HttpExchange ex, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (var out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
