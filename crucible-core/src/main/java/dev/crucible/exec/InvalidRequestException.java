package dev.crucible.exec;

/**
 * A request Crucible refuses before any sandbox starts. {@link #code()} is stable and machine-readable
 * ({@code unknown_language}, {@code runtime_unavailable}, {@code invalid_limits}, {@code invalid_file},
 * {@code invalid_request}, {@code too_many_files}, {@code payload_too_large}); the message is one line for a person.
 */
public final class InvalidRequestException extends RuntimeException {
    private final String code;

    public InvalidRequestException(String code, String message) {
        super(message);
        this.code = code;
    }

    public String code() {
        return code;
    }
}
