package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.http.JsonObject;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Locale;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Connect protocol as E2B's SDKs speak it to envd (connectrpc.com/docs/protocol), JSON codec only (neither SDK
 * sends protobuf): a unary call is a JSON body answered by a JSON body (200) or a JSON error ({@code {code, message}}
 * with the code's HTTP status); a server stream is one request envelope answered by envelopes ({@code flags:u8 |
 * length:u32be | payload}), the last of them flagged end-of-stream ({@code 0x02}) with {@code {}} or {@code {error}}.
 * A request of either kind is exactly one message: a unary body is one JSON value, a stream's body one envelope;
 * anything after it (a second value or envelope, even an empty one) and anything short of it is {@code
 * invalid_argument}, refused here, when the request is read, so before its method does anything.
 */
final class Connect {
    static final String STREAM_TYPE = "application/connect+json";
    /** The largest request message: E2B's are paths, argv and stdin chunks. */
    static final int MAX_MESSAGE = 4 << 20;
    private static final int END_STREAM = 0x02;
    private static final int COMPRESSED = 0x01;

    /** The Connect error codes and their HTTP statuses (Connect's table). */
    enum Code {
        CANCELED(499), UNKNOWN(500), INVALID_ARGUMENT(400), DEADLINE_EXCEEDED(504), NOT_FOUND(404),
        ALREADY_EXISTS(409), PERMISSION_DENIED(403), RESOURCE_EXHAUSTED(429), FAILED_PRECONDITION(400), ABORTED(409),
        UNIMPLEMENTED(501), INTERNAL(500), UNAVAILABLE(503), UNAUTHENTICATED(401);

        final int status;

        Code(int status) {
            this.status = status;
        }

        String wire() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** A refusal in Connect's terms. */
    static final class Failure extends RuntimeException {
        final Code code;

        Failure(Code code, String message) {
            super(message);
            this.code = code;
        }
    }

    private final JsonMapper json;

    Connect(JsonMapper json) {
        this.json = json;
    }

    /** Crucible's refusal as Connect's: the codes E2B's SDKs turn into their own errors. */
    static Failure of(RequestException e) {
        ErrorCode c = e.code();
        Code code = switch (c) {
            case FILE_NOT_FOUND, SESSION_NOT_FOUND, PROCESS_NOT_FOUND -> Code.NOT_FOUND;
            case PERMISSION_DENIED -> Code.PERMISSION_DENIED;
            case UNAUTHORIZED -> Code.UNAUTHENTICATED;
            case QUOTA_EXCEEDED, TOO_MANY_PROCESSES, TOO_MANY_REQUESTS, PAYLOAD_TOO_LARGE, FILE_TOO_LARGE ->
                    Code.RESOURCE_EXHAUSTED;
            case STDIN_CLOSED -> Code.FAILED_PRECONDITION;
            case INTERPRETER_UNAVAILABLE, SESSION_BUSY, COMMANDS_UNAVAILABLE -> Code.UNAVAILABLE;
            default -> c.httpStatus() < 500 ? Code.INVALID_ARGUMENT : Code.INTERNAL;
        };
        return new Failure(code, e.getMessage());
    }

    /** A unary request's message: its body, one JSON object and nothing after it (an empty body is {@code {}}). */
    JsonNode unary(HttpServletRequest req) throws IOException {
        String type = req.getContentType();
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/json")) {
            throw new Failure(Code.INVALID_ARGUMENT, "a unary call is application/json here (the JSON codec), not "
                    + type);
        }
        byte[] body = req.getInputStream().readNBytes(MAX_MESSAGE + 1);
        if (body.length > MAX_MESSAGE) {
            throw new Failure(Code.RESOURCE_EXHAUSTED, "the message is larger than " + MAX_MESSAGE + " bytes");
        }
        return parse(body.length == 0 ? "{}".getBytes() : body);
    }

    /**
     * A server stream's one request message, from its envelope: the request body must end where the envelope does
     * (read to its end, so the refusal comes before the method runs).
     */
    JsonNode streamRequest(HttpServletRequest req) throws IOException {
        String type = req.getContentType();
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith(STREAM_TYPE)) {
            throw new Failure(Code.INVALID_ARGUMENT, "a streaming call is " + STREAM_TYPE + " here, not " + type);
        }
        DataInputStream in = new DataInputStream(req.getInputStream());
        int flags;
        int length;
        try {
            flags = in.readUnsignedByte();
            length = in.readInt();
        } catch (EOFException e) {
            throw new Failure(Code.INVALID_ARGUMENT, "the request ended inside its envelope's prefix");
        }
        if ((flags & COMPRESSED) != 0) {
            throw new Failure(Code.UNIMPLEMENTED, "compressed messages are not accepted (send Connect-Content-Encoding"
                    + " identity)");
        }
        if (length < 0 || length > MAX_MESSAGE) {
            throw new Failure(Code.RESOURCE_EXHAUSTED, "an envelope of " + Integer.toUnsignedString(length)
                    + " bytes; the largest message is " + MAX_MESSAGE);
        }
        byte[] body = in.readNBytes(length);
        if (body.length < length) {
            throw new Failure(Code.INVALID_ARGUMENT, "the request ended " + (length - body.length)
                    + " bytes into its envelope");
        }
        if (in.read() != -1) {
            throw new Failure(Code.INVALID_ARGUMENT, "a server-streaming request is one message; more followed it");
        }
        return parse(body);
    }

    private JsonNode parse(byte[] body) {
        try {
            JsonNode node = json.reader().with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).readTree(body);
            if (node == null || !node.isObject()) {
                throw new Failure(Code.INVALID_ARGUMENT, "the message is not a JSON object");
            }
            return node;
        } catch (JacksonException e) {
            throw new Failure(Code.INVALID_ARGUMENT, "the message is not one JSON value: " + e.getOriginalMessage());
        }
    }

    /** Answers a unary call. */
    void answer(HttpServletResponse res, Object message) throws IOException {
        res.setStatus(200);
        res.setContentType("application/json");
        res.getOutputStream().write(json.writeValueAsBytes(message));
    }

    /** Answers a unary call (or a stream before its first message) with an error. */
    void fail(HttpServletResponse res, Failure f) throws IOException {
        res.setStatus(f.code.status);
        res.setContentType("application/json");
        res.getOutputStream().write(json.writeValueAsBytes(JsonObject.of("code", f.code.wire(), "message",
                f.getMessage() == null ? f.code.wire() : f.getMessage())));
    }

    /** The response side of a server stream: its messages, then its end. */
    final class Stream {
        private final OutputStream out;

        Stream(HttpServletResponse res) throws IOException {
            res.setStatus(200);
            res.setContentType(STREAM_TYPE);
            this.out = res.getOutputStream();
        }

        /** Sends one message at once. */
        synchronized void send(Object message) throws IOException {
            envelope(0, json.writeValueAsBytes(message));
        }

        /** Ends the stream: {@code failure} null for a clean end. */
        synchronized void end(Failure failure) throws IOException {
            envelope(END_STREAM, json.writeValueAsBytes(failure == null ? Map.of() : JsonObject.of("error", JsonObject.of("code",
                    failure.code.wire(), "message", failure.getMessage() == null ? "" : failure.getMessage()))));
        }

        private void envelope(int flags, byte[] payload) throws IOException {
            byte[] prefix = {(byte) flags, (byte) (payload.length >>> 24), (byte) (payload.length >>> 16),
                    (byte) (payload.length >>> 8), (byte) payload.length};
            out.write(prefix);
            out.write(payload);
            out.flush();
        }
    }

}
