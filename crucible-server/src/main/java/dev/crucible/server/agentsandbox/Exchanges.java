package dev.crucible.server.agentsandbox;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/** Reading and answering one exchange of the JDK's HTTP server, the way every contract here does. */
final class Exchanges {
    static final JsonMapper JSON = JsonMapper.builder().build();

    private Exchanges() {}

    /** Thrown for a body past its cap: the caller answers 413. */
    static final class TooLarge extends Exception {
        TooLarge(long cap) {
            super("the body is larger than " + cap + " bytes, the most this sandbox takes");
        }
    }

    /** The whole body, at most {@code cap} bytes. */
    static byte[] body(HttpExchange exchange, long cap) throws IOException, TooLarge {
        String length = exchange.getRequestHeaders().getFirst("Content-Length");
        if (length != null && length.chars().allMatch(Character::isDigit) && !length.isEmpty()
                && Long.parseLong(length) > cap) {
            throw new TooLarge(cap);
        }
        try (InputStream in = exchange.getRequestBody()) {
            byte[] read = in.readNBytes((int) Math.min(cap + 1, Integer.MAX_VALUE - 8));
            if (read.length > cap) {
                throw new TooLarge(cap);
            }
            return read;
        }
    }

    /** Answers {@code value} as JSON with {@code status}. */
    static void json(HttpExchange exchange, int status, Object value) throws IOException {
        send(exchange, status, "application/json", JSON.writeValueAsBytes(value));
    }

    /** Answers {@code {"message": message}} with {@code status}, as the python-runtime contract words its errors. */
    static void message(HttpExchange exchange, int status, String message) throws IOException {
        json(exchange, status, Map.of("message", message));
    }

    /** Answers {@code body} of {@code type} with {@code status}; a HEAD request gets the headers only. */
    static void send(HttpExchange exchange, int status, String type, byte[] body) throws IOException {
        if (type != null) {
            exchange.getResponseHeaders().set("Content-Type", type);
        }
        boolean head = exchange.getRequestMethod().equals("HEAD");
        if (head || status == 204) {
            if (head) {
                exchange.getResponseHeaders().set("Content-Length", Integer.toString(body.length));
            }
            exchange.sendResponseHeaders(status, -1);
        } else {
            exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
            if (body.length > 0) {
                exchange.getResponseBody().write(body);
            }
        }
        exchange.close();
    }

    /** {@code text} as UTF-8. */
    static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
