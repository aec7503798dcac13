package dev.crucible.image.registry;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * An HTTP proxy in front of a {@link TestRegistry} for the pull tests: forwards each request, records it, and on
 * demand cuts one response short (as a killed connection does), stalls one, sends blobs slowly, alters bodies, or answers
 * blob GETs with a redirect to "storage" it serves itself under another host name (as registries redirect to S3).
 */
public final class TestProxy implements AutoCloseable {
    private final AtomicInteger blobsNow = new AtomicInteger();
    private final AtomicInteger maxBlobsAtOnce =
            new AtomicInteger();
    /** A request as it reached the proxy. */
    public record Seen(String method, String path, String range, String authorization) {
        public boolean isBlob() {
            return path.contains("/blobs/sha256:");
        }
    }

    private static final Set<String> HOP_BY_HOP = Set.of("host", "connection", "content-length", "upgrade", "expect",
            "transfer-encoding", "keep-alive", "date");

    private record Stored(int status, HttpHeaders headers, byte[] body) {}

    private final HttpServer server;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final URI upstream;
    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final Map<String, Stored> storage = new ConcurrentHashMap<>();
    private volatile Predicate<String> cutPath;
    private volatile long cutAfter;
    private volatile Predicate<String> alterPath;
    private volatile UnaryOperator<byte[]> alteration;
    private volatile String redirectHost;
    private volatile boolean stall;
    private volatile boolean ignoreRanges;
    private volatile long blobBytesPerSecond;

    private TestProxy(String upstreamHost) throws IOException {
        this.upstream = URI.create("http://" + upstreamHost + "/");
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
    }

    /** A proxy to {@code upstreamHost} (host:port, plain HTTP). */
    public static TestProxy start(String upstreamHost) throws IOException {
        return new TestProxy(upstreamHost);
    }

    /** {@code 127.0.0.1:PORT}. */
    public String host() {
        return "127.0.0.1:" + server.getAddress().getPort();
    }

    public List<Seen> requests() {
        return List.copyOf(seen);
    }

    void clearRequests() {
        seen.clear();
    }

    /** The next response whose path matches ends after {@code bytes} bytes of its body, the connection dropped. */
    void cutOnce(Predicate<String> path, long bytes) {
        cutAfter = bytes;
        cutPath = path;
    }

    /** The next response whose path matches stops after {@code bytes} bytes of its body, the connection kept open. */
    public void stallOnce(Predicate<String> path, long bytes) {
        stall = true;
        cutOnce(path, bytes);
    }

    /** The most blob GETs that were being answered at the same time. */
    public int maxBlobsAtOnce() {
        return maxBlobsAtOnce.get();
    }

    /** Blob bodies are sent at about {@code bytesPerSecond} (a slow link: the pull progresses, slowly). */
    public void throttleBlobs(long bytesPerSecond) {
        blobBytesPerSecond = bytesPerSecond;
    }

    /** Range headers are not forwarded: the registry answers every blob GET whole, as some servers do. */
    void ignoreRanges() {
        ignoreRanges = true;
    }

    /** Bodies of responses whose path matches are replaced by {@code change} of them. */
    void alter(Predicate<String> path, UnaryOperator<byte[]> change) {
        alteration = change;
        alterPath = path;
    }

    /** Blob GETs are answered with a 307 to {@code http://hostName:PORT/storage/…}, served by this proxy. */
    void redirectBlobsVia(String hostName) {
        redirectHost = hostName;
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            URI uri = exchange.getRequestURI();
            String path = uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
            Seen request = new Seen(exchange.getRequestMethod(), path, exchange.getRequestHeaders().getFirst("Range"),
                    exchange.getRequestHeaders().getFirst("Authorization"));
            seen.add(request);
            boolean blob = request.isBlob() && request.method().equals("GET");
            if (blob) {
                maxBlobsAtOnce.accumulateAndGet(blobsNow.incrementAndGet(), Math::max);
            }
            try {
                answer(exchange, request, path);
            } finally {
                if (blob) {
                    blobsNow.decrementAndGet();
                }
            }
        }
    }

    private void answer(HttpExchange exchange, Seen request, String path) throws IOException {
        if (path.startsWith("/storage/")) {
            Stored stored = storage.get(path.substring("/storage/".length()));
            respond(exchange, stored.status(), stored.headers(), stored.body());
            return;
        }
        HttpResponse<InputStream> response = forward(exchange, path);
        int status = response.statusCode();
        if (redirectHost != null && request.isBlob() && (status == 200 || status == 206)) {
            String id = UUID.randomUUID().toString();
            storage.put(id, new Stored(status, response.headers(), readAll(response)));
            exchange.getResponseHeaders().set("Location", "http://" + redirectHost + ":"
                    + server.getAddress().getPort() + "/storage/" + id);
            exchange.sendResponseHeaders(307, -1);
        } else if (alterPath != null && alterPath.test(path)) {
            respond(exchange, status, response.headers(), alteration.apply(readAll(response)));
        } else if (cutPath != null && cutPath.test(path)) {
            cutPath = null;
            cut(exchange, response);
        } else {
            stream(exchange, response, request.isBlob() ? blobBytesPerSecond : 0);
        }
    }

    private HttpResponse<InputStream> forward(HttpExchange exchange, String path) throws IOException {
        HttpRequest.Builder request = HttpRequest.newBuilder(upstream.resolve(path.substring(1)))
                .method(exchange.getRequestMethod(), HttpRequest.BodyPublishers.ofByteArray(
                        exchange.getRequestBody().readAllBytes()));
        exchange.getRequestHeaders().forEach((name, values) -> {
            String lower = name.toLowerCase(Locale.ROOT);
            if (!HOP_BY_HOP.contains(lower) && !(ignoreRanges && lower.equals("range"))) {
                values.forEach(value -> request.header(name, value));
            }
        });
        try {
            return client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private static byte[] readAll(HttpResponse<InputStream> response) throws IOException {
        try (InputStream body = response.body()) {
            return body.readAllBytes();
        }
    }

    private static void copyHeaders(HttpExchange exchange, HttpHeaders headers) {
        headers.map().forEach((name, values) -> {
            if (!HOP_BY_HOP.contains(name.toLowerCase(Locale.ROOT)) && !name.startsWith(":")) {
                exchange.getResponseHeaders().put(name, values);
            }
        });
    }

    private static void respond(HttpExchange exchange, int status, HttpHeaders headers, byte[] body)
            throws IOException {
        copyHeaders(exchange, headers);
        boolean none = body.length == 0 || exchange.getRequestMethod().equals("HEAD");
        exchange.sendResponseHeaders(status, none ? -1 : body.length);
        if (!none) {
            exchange.getResponseBody().write(body);
        }
    }

    /** Forwards the body, at about {@code bytesPerSecond} when it is positive. */
    private static void stream(HttpExchange exchange, HttpResponse<InputStream> response, long bytesPerSecond)
            throws IOException {
        copyHeaders(exchange, response.headers());
        boolean known = response.headers().firstValue("Content-Length").isPresent();
        long length = response.headers().firstValueAsLong("Content-Length").orElse(0);
        boolean none = exchange.getRequestMethod().equals("HEAD") || known && length == 0;
        exchange.sendResponseHeaders(response.statusCode(), none ? -1 : known ? length : 0);
        try (InputStream body = response.body(); OutputStream out = exchange.getResponseBody()) {
            if (none) {
                return;
            }
            if (bytesPerSecond <= 0) {
                body.transferTo(out);
                return;
            }
            byte[] buffer = new byte[64 * 1024];
            long start = System.nanoTime();
            long sent = 0;
            for (int n; (n = body.read(buffer)) > 0; ) {
                out.write(buffer, 0, n);
                out.flush();
                sent += n;
                long ahead = sent * 1_000_000_000L / bytesPerSecond - (System.nanoTime() - start);
                if (ahead > 0) {
                    Thread.sleep(ahead / 1_000_000, (int) (ahead % 1_000_000)); // the link's pace, not a test's wait
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("closed", e);
        }
    }

    /** Sends the headers with the whole length, {@code cutAfter} bytes of the body, then drops the connection. */
    private void cut(HttpExchange exchange, HttpResponse<InputStream> response) throws IOException {
        copyHeaders(exchange, response.headers());
        long length = response.headers().firstValueAsLong("Content-Length").orElseThrow();
        exchange.sendResponseHeaders(response.statusCode(), length);
        try (InputStream body = response.body()) {
            OutputStream out = exchange.getResponseBody();
            out.write(body.readNBytes((int) Math.min(cutAfter, length)));
            out.flush();
        }
        if (stall) {
            try {
                Thread.sleep(60_000); // until the client gives up, or close() interrupts
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        throw new IOException("cut by the test"); // the server drops a connection whose handler throws
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
        client.shutdownNow();
    }
}
