package dev.crucible.server.http;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import tools.jackson.databind.DatabindException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.cfg.EnumFeature;
import tools.jackson.databind.exc.InvalidFormatException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;
import tools.jackson.databind.exc.ValueInstantiationException;
import tools.jackson.databind.json.JsonMapper;

/**
 * Request bodies of Crucible's own API: read with the size cap and the content type checked, strictly (a field the
 * route does not know, or a value an enumerated field does not take, is a {@code 400 invalid_request} that names it
 * and what to write instead); a refused one drained before the answer. The compatible APIs read {@link #bytes} with
 * a lenient mapper of their own, as their originals do. Thread-safe.
 */
public final class Bodies {
    private final JsonMapper json;
    private final long maxBytes;

    /**
     * @param json the API's mapper; bodies are read with its settings, unknown fields refused
     * @param maxBytes the largest body taken; beyond it, 413
     */
    public Bodies(JsonMapper json, long maxBytes) {
        this.json = json.rebuild().enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(EnumFeature.FAIL_ON_NUMBERS_FOR_ENUMS).build();
        this.maxBytes = maxBytes;
    }

    /** Reads a JSON body; nothing of it reaches a sandbox yet. */
    public <T> T read(Context ctx, Class<T> type) throws IOException {
        String contentType = ctx.header("Content-Type");
        if (contentType == null || !contentType.toLowerCase(Locale.ROOT).startsWith("application/json")) {
            throw new RequestException(ErrorCode.UNSUPPORTED_MEDIA_TYPE,
                    "send the body as JSON with Content-Type: application/json");
        }
        byte[] bytes = bytes(ctx);
        if (bytes.length == 0) {
            throw new RequestException(ErrorCode.INVALID_JSON, "the body is empty; send a JSON object");
        }
        T value = strictly(bytes, type);
        if (value == null) {
            throw new RequestException(ErrorCode.INVALID_JSON, "the body is JSON null; send a JSON object");
        }
        return value;
    }

    private <T> T strictly(byte[] bytes, Class<T> type) {
        try {
            return json.readValue(bytes, type);
        } catch (UnrecognizedPropertyException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, UnknownField.message(e, json));
        } catch (InvalidFormatException e) {
            throw notOneOf(e, e.getTargetType(), e.getValue());
        } catch (ValueInstantiationException e) {
            throw notOneOf(e, e.getType() == null ? null : e.getType().getRawClass(), null);
        }
    }

    /** For a value an enumerated field does not take: the field and the values it does; else {@code e} itself. */
    private RuntimeException notOneOf(DatabindException e, Class<?> target, Object value) {
        if (target == null || !target.isEnum()) {
            return e;
        }
        String allowed = Arrays.stream(target.getEnumConstants())
                .map(c -> "`" + json.valueToTree(c).asString() + "`").collect(Collectors.joining(", "));
        return new RequestException(ErrorCode.INVALID_REQUEST, "`" + UnknownField.path(e.getPath()) + "` is one of "
                + allowed + (value == null ? "" : ", not `" + printable(String.valueOf(value)) + "`"));
    }

    /** A name or value from a body fit for a message: control characters replaced, at most 64 characters. */
    static String printable(String s) {
        String clean = s.replaceAll("\\p{Cntrl}", "?");
        return clean.length() > 64 ? clean.substring(0, 64) + "…" : clean;
    }

    /** The raw body, refused with 413 past the cap (by its Content-Length first, then by what arrives). */
    public byte[] bytes(Context ctx) throws IOException {
        String length = ctx.header("Content-Length");
        if (length != null && length.matches("\\d{1,18}") && Long.parseLong(length) > maxBytes) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "the body is larger than " + maxBytes + " bytes");
        }
        byte[] bytes = ctx.req().getInputStream().readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBytes + 1));
        if (bytes.length > maxBytes) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "the body is larger than " + maxBytes + " bytes");
        }
        return bytes;
    }

    /**
     * Reads and discards what a refused request still has to send, up to a bound, before the answer goes out: a
     * client that writes its whole body before reading (Python's requests and urllib, without {@code Expect:
     * 100-continue}) otherwise meets a closed socket and reports a connection reset instead of the JSON error —
     * nginx's lingering close. Past the bound (twice the body cap, at least 64 MiB) the connection is closed.
     */
    public void drainRefused(Context ctx) {
        if (ctx.attribute("crucible.drained") != null) {
            return;
        }
        ctx.attribute("crucible.drained", Boolean.TRUE);
        long bound = Math.max(64L << 20, 2 * maxBytes);
        try {
            InputStream in = ctx.req().getInputStream();
            byte[] sink = new byte[64 * 1024];
            for (long total = 0; total < bound; ) {
                int n = in.read(sink, 0, (int) Math.min(sink.length, bound - total));
                if (n < 0) {
                    return;
                }
                total += n;
            }
        } catch (IOException | RuntimeException e) {
            // the client went away, or the body cannot be read any more: nothing to linger for
        }
    }
}
