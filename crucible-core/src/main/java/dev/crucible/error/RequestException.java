package dev.crucible.error;

/**
 * A request Crucible refuses, before or instead of running anything: an {@link ErrorCode} (machine-readable, with its
 * HTTP status) and a one-line message for a person that says how to fix the request.
 */
public final class RequestException extends RuntimeException {
    private final ErrorCode code;
    private final int retryAfterSeconds;

    public RequestException(ErrorCode code, String message) {
        this(code, message, code.retryAfterSeconds());
    }

    /** A refusal that says when to come back: {@code retryAfterSeconds} (at least 1) instead of its code's. */
    public RequestException(ErrorCode code, String message, int retryAfterSeconds) {
        super(message);
        this.code = code;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public ErrorCode code() {
        return code;
    }

    /** When to ask again, in seconds, as {@code Retry-After} says it; 0 when asking again would not help. */
    public int retryAfterSeconds() {
        return retryAfterSeconds;
    }
}
