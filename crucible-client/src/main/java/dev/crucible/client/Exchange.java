package dev.crucible.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * One call to the server: sent, and sent again while the answer is a refusal that says when to come back (429 or 503
 * with {@code Retry-After}: a full queue, a create's wait, an image being pulled), at most {@link #RETRIES} times and
 * only for a wait of at most {@link #MAX_WAIT}; each wait is stretched by up to a fifth at random, so the callers of
 * one burst do not all come back in the same instant. Any other error answer is a {@link CrucibleException} at once.
 */
final class Exchange {
    static final int RETRIES = 3;
    static final Duration MAX_WAIT = Duration.ofSeconds(30);

    private Exchange() {}

    /** The body of {@code request}'s 2xx answer from {@code http}, after the retries its refusals allow. */
    static byte[] send(HttpClient http, HttpRequest request, URI base, Duration timeout) {
        for (int attempt = 0;; attempt++) {
            HttpResponse<byte[]> response;
            try {
                response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
            } catch (HttpTimeoutException e) {
                throw new CrucibleException(0, "timeout", request.method() + " " + request.uri().getPath()
                        + " got no answer within " + timeout.toMillis() + " ms", e);
            } catch (IOException e) {
                throw new CrucibleException(0, "connection_failed", "cannot reach Crucible at " + base + ": " + e, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CrucibleException(0, "interrupted", "interrupted while waiting for " + request.uri(), e);
            }
            if (response.statusCode() / 100 == 2) {
                return response.body();
            }
            long waitMs = retryAfterMs(response);
            if (attempt >= RETRIES || waitMs < 0) {
                throw errorOf(response);
            }
            try {
                Thread.sleep(waitMs + ThreadLocalRandom.current().nextLong(waitMs / 5 + 1));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CrucibleException(0, "interrupted", "interrupted while waiting to ask again", e);
            }
        }
    }

    /** How long the refusal asks the caller to wait before asking again, in ms; -1 when asking again would not do. */
    static long retryAfterMs(HttpResponse<?> response) {
        if (response.statusCode() != 429 && response.statusCode() != 503) {
            return -1;
        }
        String header = response.headers().firstValue("Retry-After").orElse("").strip();
        if (!header.matches("[0-9]{1,6}")) {
            return -1;
        }
        long ms = Long.parseLong(header) * 1000;
        return ms > MAX_WAIT.toMillis() ? -1 : ms;
    }

    private static CrucibleException errorOf(HttpResponse<byte[]> response) {
        String code = "http_" + response.statusCode();
        String message = new String(response.body(), StandardCharsets.UTF_8);
        try {
            JsonNode error = CrucibleClient.JSON.readTree(response.body()).path("error");
            if (error.isObject()) {
                code = error.path("code").asString(code);
                message = error.path("message").asString(message);
            }
        } catch (JacksonException e) {
            // not JSON: the body as it came
        }
        return new CrucibleException(response.statusCode(), code, message, null);
    }
}
