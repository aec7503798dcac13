package dev.crucible.eval.dataset;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.eval.Judge;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A remote Crucible (one server, or many behind a balancer) as {@link Sandboxes}: a sample is one {@code POST
 * /v1/execute} or {@code /v1/evaluate}, the same request the local path makes, so verdicts are identical.
 *
 * <p>A request that got no answer — connection refused or reset, 408, 429 (after its Retry-After), 500, 502, 503,
 * 504, a timeout — is sent again with exponential back-off and jitter, up to {@link Options#attempts()} in all; then
 * {@link NoVerdict}. Sending again is safe: an execute or evaluate is stateless, so a duplicate that ran on two
 * replicas costs only time, and the caller keeps the one answer it got. Any other 4xx is the request's own fault and
 * is thrown as a {@link RequestException}, as the local engine throws it. 401 and 403 are fatal {@link NoVerdict}s.
 *
 * <p>{@link #concurrency()} is the endpoint's {@code max_running + max_queued} from {@code /healthz}, re-read every
 * {@link Options#healthEvery()} in the background (behind a balancer: the replica that answered). Thread-safe.
 */
public final class RemoteCrucible implements Sandboxes {
    /** Statuses that mean "no answer from a sandbox yet": try again. */
    private static final Set<Integer> RETRIED = Set.of(408, 429, 500, 502, 503, 504);
    /** When /healthz does not say (an older server): what a default server takes on a 2-core host, running + queued. */
    private static final int DEFAULT_CAPACITY = 4 + 64;
    private static final JsonMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build(); // wire records are append-only

    /**
     * @param url the server or balancer, e.g. {@code http://crucible:8080}
     * @param token the bearer token, or null
     * @param attempts tries per request in all (at least 1)
     * @param firstBackoff the wait before the second try; doubled per try up to {@code maxBackoff}, with jitter
     * @param healthEvery how often {@code /healthz} is read again
     * @param maxConcurrency a cap on {@link #concurrency()}, or 0 for none
     */
    public record Options(URI url, String token, int attempts, Duration firstBackoff, Duration maxBackoff,
            Duration healthEvery, int maxConcurrency) {
        public Options {
            if (attempts < 1) {
                throw new IllegalArgumentException("attempts must be at least 1");
            }
            String scheme = url.getScheme();
            if (url.getHost() == null || !("http".equals(scheme) || "https".equals(scheme))) {
                throw new IllegalArgumentException("the URL must be http://host[:port] or https://…, not " + url);
            }
        }

        /** 8 tries over about half a minute, /healthz every 5 s, no cap. */
        public static Options of(URI url, String token) {
            return new Options(url, token, 8, Duration.ofMillis(250), Duration.ofSeconds(10), Duration.ofSeconds(5), 0);
        }

        public Options withAttempts(int n) {
            return new Options(url, token, n, firstBackoff, maxBackoff, healthEvery, maxConcurrency);
        }

        public Options withMaxConcurrency(int n) {
            return new Options(url, token, attempts, firstBackoff, maxBackoff, healthEvery, n);
        }

        public Options withHealthEvery(Duration every) {
            return new Options(url, token, attempts, firstBackoff, maxBackoff, every, maxConcurrency);
        }

        public Options withBackoff(Duration first, Duration max) {
            return new Options(url, token, attempts, first, max, healthEvery, maxConcurrency);
        }
    }

    private final Options options;
    private final URI base;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Integer> retries = new ConcurrentHashMap<>();
    private final AtomicBoolean reading = new AtomicBoolean();
    private volatile int capacity;
    private volatile long readAt;

    private RemoteCrucible(Options options, int capacity) {
        this.options = options;
        this.base = URI.create(options.url().toString().replaceAll("/+$", "") + "/");
        this.capacity = capacity;
        this.readAt = System.nanoTime();
    }

    /**
     * Reads {@code /healthz} and checks the token on {@code /v1/runtimes}, with at most 3 tries each (a mistyped URL
     * fails in a few seconds, not after a sample's whole back-off).
     *
     * @throws NoVerdict when the endpoint does not answer (not fatal: try later) or refuses the token (fatal)
     */
    public static RemoteCrucible connect(Options options) throws NoVerdict, InterruptedException {
        RemoteCrucible remote = new RemoteCrucible(options, DEFAULT_CAPACITY);
        int tries = Math.min(3, options.attempts());
        remote.capacity = capacityOf(remote.send(remote.request("healthz").GET(), Duration.ofSeconds(10), true, tries));
        remote.send(remote.request("v1/runtimes").GET(), Duration.ofSeconds(10), false, tries);
        return remote;
    }

    @Override
    public ExecuteResult execute(ExecuteRequest request) throws InterruptedException, NoVerdict {
        String body = send(request("v1/execute").POST(json(request)), timeout(request.limits() == null ? null
                : request.limits().timeoutMs(), 1), false, options.attempts());
        return JSON.readValue(body, ExecuteResult.class);
    }

    @Override
    public Judge.Result evaluate(Judge.Request request) throws InterruptedException, NoVerdict {
        int cases = request.testcases() == null ? 1 : Math.max(1, request.testcases().size());
        String body = send(request("v1/evaluate").POST(json(request)), timeout(request.limits() == null ? null
                : request.limits().timeoutMs(), cases), false, options.attempts());
        return JSON.readValue(body, Judge.Result.class);
    }

    /** The endpoint's {@code max_running + max_queued} as last read (capped by the options); reads again when due. */
    @Override
    public int concurrency() {
        if (System.nanoTime() - readAt > options.healthEvery().toNanos() && reading.compareAndSet(false, true)) {
            http.sendAsync(request("healthz").timeout(Duration.ofSeconds(5)).GET().build(),
                    HttpResponse.BodyHandlers.ofString()).whenComplete((r, failure) -> {
                        if (r != null && (r.statusCode() == 200)) {
                            try {
                                capacity = capacityOf(r.body());
                            } catch (RuntimeException e) {
                                // not a Crucible answer (a balancer's page): keep the last figure
                            }
                        }
                        readAt = System.nanoTime();
                        reading.set(false);
                    });
        }
        int c = Math.max(1, capacity);
        return options.maxConcurrency() > 0 ? Math.min(c, options.maxConcurrency()) : c;
    }

    /** How many requests were sent again, by reason ({@code http 503}, {@code connect}, {@code io}, {@code timeout}). */
    public Map<String, Integer> retries() {
        return new TreeMap<>(retries);
    }

    private static int capacityOf(String healthz) {
        JsonNode n = JSON.readTree(healthz);
        if (!n.has("max_running")) {
            return DEFAULT_CAPACITY;
        }
        return n.get("max_running").asInt() + (n.has("max_queued") ? n.get("max_queued").asInt() : 0);
    }

    /** A request may wait for a turn behind others, then run up to its timeout per case: a generous bound. */
    private static Duration timeout(Long timeoutMs, int cases) {
        long perCase = timeoutMs == null ? 10_000 : timeoutMs;
        return Duration.ofMillis(Math.min(Long.MAX_VALUE / 4, 2 * perCase * cases + 60_000));
    }

    private HttpRequest.Builder request(String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).header("Accept", "application/json");
        if (options.token() != null && !options.token().isEmpty()) {
            b.header("Authorization", "Bearer " + options.token());
        }
        return b;
    }

    private static HttpRequest.BodyPublisher json(Object body) {
        return HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body));
    }

    /**
     * The body of a 200 answer, trying again while there is none. With {@code health} (/healthz) every other status
     * is tried again: a draining replica's 503, and whatever a balancer says while it has no server.
     */
    private String send(HttpRequest.Builder builder, Duration timeout, boolean health, int attempts)
            throws InterruptedException, NoVerdict {
        HttpRequest request = builder.header("Content-Type", "application/json").timeout(timeout).build();
        String last = null;
        for (int attempt = 1; attempt <= attempts; attempt++) {
            long waitMs = backoff(attempt);
            String reason;
            try {
                HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
                int status = r.statusCode();
                if (status == 200) {
                    return r.body();
                }
                if (status == 401 || status == 403) {
                    throw new NoVerdict(request.uri() + " answered " + status + " (" + message(r.body())
                            + "): check --token", true);
                }
                if (!RETRIED.contains(status) && !health) {
                    throw refusal(status, r.body()); // the request's own fault: the same answer as the local engine's
                }
                reason = "http " + status;
                last = reason + " " + message(r.body());
                String after = r.headers().firstValue("Retry-After").orElse("");
                if (after.matches("\\d{1,4}")) {
                    waitMs = Math.min(options.maxBackoff().toMillis(), Long.parseLong(after) * 1000
                            + ThreadLocalRandom.current().nextLong(1 + options.firstBackoff().toMillis()));
                }
            } catch (HttpTimeoutException e) {
                reason = "timeout";
                last = "no answer within " + timeout.toSeconds() + " s";
            } catch (ConnectException e) {
                reason = "connect";
                last = "connection refused";
            } catch (IOException e) { // reset, closed mid-answer, a balancer's broken pipe
                reason = "io";
                last = e.getMessage() == null ? e.toString() : e.getMessage();
            }
            if (attempt == attempts) {
                break;
            }
            retries.merge(reason, 1, Integer::sum);
            Thread.sleep(waitMs);
        }
        throw new NoVerdict(request.uri().getPath() + ": no answer after " + attempts + " attempts (last: "
                + last + ")", false);
    }

    /** Full jitter over an exponential ceiling: retries of many samples do not arrive together. */
    private long backoff(int attempt) {
        long ceiling = Math.min(options.maxBackoff().toMillis(),
                options.firstBackoff().toMillis() << Math.min(20, attempt - 1));
        return ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
    }

    private static RequestException refusal(int status, String body) {
        ErrorCode code = ErrorCode.INVALID_REQUEST;
        try {
            String wire = JSON.readTree(body).path("error").path("code").asString("");
            code = ErrorCode.valueOf(wire.toUpperCase(Locale.ROOT));
        } catch (RuntimeException e) {
            // not Crucible's error shape: keep invalid_request, with the status in the message
        }
        return new RequestException(code, message(body) + (body.contains("\"error\"") ? "" : " (HTTP " + status + ")"));
    }

    private static String message(String body) {
        try {
            JsonNode n = JSON.readTree(body);
            if (n.path("error").has("message")) {
                return n.path("error").path("message").asString();
            }
        } catch (RuntimeException e) {
            // a balancer's HTML page
        }
        String line = body == null ? "" : body.strip().lines().findFirst().orElse("");
        return line.length() > 200 ? line.substring(0, 200) : line;
    }
}
