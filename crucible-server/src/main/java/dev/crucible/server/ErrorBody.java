package dev.crucible.server;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;

/** The body of every error answer: {@code {"error": {"code": "...", "message": "..."}}}. */
record ErrorBody(@JsonProperty("error") Detail error) {
    record Detail(@JsonProperty("code") String code, @JsonProperty("message") String message) {}

    static ErrorBody of(ErrorCode code, String message) {
        return new ErrorBody(new Detail(code.wireName(), message));
    }
}
