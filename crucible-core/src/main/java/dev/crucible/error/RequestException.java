package dev.crucible.error;

/**
 * A request Crucible refuses, before or instead of running anything: an {@link ErrorCode} (machine-readable, with its
 * HTTP status) and a one-line message for a person that says how to fix the request.
 */
public final class RequestException extends RuntimeException {
    private final ErrorCode code;

    public RequestException(ErrorCode code, String message) {
        super(message);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }
}
