package dev.crucible.server;

import dev.crucible.error.ErrorCode;
import dev.crucible.server.http.ErrorBody;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import tools.jackson.databind.json.JsonMapper;

/**
 * The answer to a request that Jetty refuses before any route sees it (a NUL or a malformed escape in the path, a
 * request line or header it cannot parse, headers over its limit): the API's {@code {"error": {code, message}}}
 * instead of Jetty's HTML page, with {@code Connection: close}. Jetty closes such a connection after answering;
 * without the header a client that keeps connections alive reuses it and its next request fails with no answer.
 */
final class JettyErrorHandler extends ErrorHandler {
    private final JsonMapper json;

    JettyErrorHandler(JsonMapper json) {
        this.json = json;
    }

    @Override
    protected void generateResponse(Request request, Response response, int status, String message, Throwable cause,
            Callback callback) {
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.getHeaders().put(HttpHeader.CONNECTION, "close");
        response.write(true, ByteBuffer.wrap(body(status, message)), callback);
    }

    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        fields.put(HttpHeader.CONTENT_TYPE, "application/json");
        fields.put(HttpHeader.CONNECTION, "close");
        return ByteBuffer.wrap(body(status, reason));
    }

    private byte[] body(int status, String reason) {
        ErrorCode code = switch (status) {
            case 413 -> ErrorCode.PAYLOAD_TOO_LARGE;
            case 414 -> ErrorCode.URI_TOO_LONG;
            case 431 -> ErrorCode.HEADERS_TOO_LARGE;
            default -> status >= 500 ? ErrorCode.INTERNAL : ErrorCode.INVALID_REQUEST;
        };
        String message = "the HTTP request was refused before it reached Crucible"
                + (reason == null || reason.isBlank() ? "" : ": " + reason)
                + " (check the path's escapes and the request's headers)";
        return json.writeValueAsBytes(ErrorBody.of(code, message));
    }
}
