package dev.crucible.client;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;

/**
 * The one way the client's parts talk to the server: a JSON call or a raw exchange, with the token, the timeout and
 * {@link Exchange}'s retries. {@link CrucibleClient} and every {@link Session} of it share one.
 */
final class Transport {
    private final HttpClient http;
    private final URI base;
    private final String token;
    private final Duration timeout;

    Transport(URI base, String token, Duration timeout) {
        String s = base.toString();
        this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
        this.token = token == null || token.isBlank() ? null : token.strip();
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    }

    URI base() {
        return base;
    }

    /** {@code method path} with {@code body} as JSON (none when null), its answer read as {@code type}. */
    <T> T call(String method, String path, Object body, TypeReference<T> type) {
        HttpRequest.Builder builder = request(path);
        if (body == null) { // the server takes a POST only with JSON or this header (no browser sends it cross-site)
            builder.header("X-Crucible-Request", "1").method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            builder.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofByteArray(CrucibleClient.JSON.writeValueAsBytes(body)));
        }
        byte[] answer = send(builder);
        try {
            return CrucibleClient.JSON.readValue(answer, type);
        } catch (JacksonException e) {
            throw new CrucibleException(0, "invalid_response", "the server's answer to " + method + " " + path
                    + " is not the expected JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** A request to {@code path} with the token and the timeout, to be finished by the caller. */
    HttpRequest.Builder request(String path) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout)
                .header("Accept", "application/json");
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        return builder;
    }

    /** Sends the request, asking again while a refusal says when to ({@link Exchange}). */
    byte[] send(HttpRequest.Builder builder) {
        return Exchange.send(http, builder.build(), base, timeout);
    }

    /** An id as one path segment. */
    static String segment(String id) {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("a session id is required");
        }
        return URLEncoder.encode(id, StandardCharsets.UTF_8);
    }

    /** Each segment of a workspace path encoded on its own; the server judges what the path may be. */
    static String path(String path) {
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("a file path is required");
        }
        StringBuilder out = new StringBuilder();
        for (String part : path.split("/", -1)) {
            if (!out.isEmpty()) {
                out.append('/');
            }
            out.append(URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20"));
        }
        return out.toString();
    }
}
