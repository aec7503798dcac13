package dev.crucible.server.http;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;

/** The body of every error answer: {@code {"error": {"code": "...", "message": "..."}}}. */
public record ErrorBody(@JsonProperty("error") Detail error) {
    public record Detail(@JsonProperty("code") String code, @JsonProperty("message") String message) {}

    public static ErrorBody of(ErrorCode code, String message) {
        return new ErrorBody(new Detail(code.wireName(), message));
    }
}
