package dev.crucible.server;

/** An answer other than success: the HTTP status and the stable error code of {@code {error: {code, message}}}. */
final class ApiException extends RuntimeException {
    final int status;
    final String code;
    final String retryAfter;

    ApiException(int status, String code, String message) {
        this(status, code, message, null);
    }

    ApiException(int status, String code, String message, String retryAfter) {
        super(message);
        this.status = status;
        this.code = code;
        this.retryAfter = retryAfter;
    }
}
