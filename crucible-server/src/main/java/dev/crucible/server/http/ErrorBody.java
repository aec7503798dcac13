package dev.crucible.server.http;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;

/** The body of every error answer: {@code {"error": {"code": "...", "message": "..."}}}. */
public record ErrorBody(@JsonProperty("error") Detail error) {
    /** {@code retry_after_s}: when asking again may succeed (as {@code Retry-After}); absent when it would not help. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Detail(@JsonProperty("code") String code, @JsonProperty("message") String message,
            @JsonProperty("retry_after_s") Integer retryAfterS) {}

    /**
     * The request attribute that says its response is complete as it is (an error already written, or a session's
     * server's own answer through a port): the server's status handlers (its JSON 404 and 405) leave it alone.
     */
    public static final String ANSWERED = "crucible.error";

    public static ErrorBody of(ErrorCode code, String message) {
        return of(code, message, code.retryAfterSeconds());
    }

    /** The error with {@code retryAfterSeconds} (0: none). */
    public static ErrorBody of(ErrorCode code, String message, int retryAfterSeconds) {
        return new ErrorBody(new Detail(code.wireName(), message, retryAfterSeconds > 0 ? retryAfterSeconds : null));
    }
}
