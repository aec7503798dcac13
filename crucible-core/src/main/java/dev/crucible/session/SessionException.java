package dev.crucible.session;

/**
 * A session request Crucible refuses. {@link #code()} is stable and machine-readable: {@code session_not_found},
 * {@code too_many_sessions}, {@code session_busy}, {@code cell_too_large}, {@code file_not_found},
 * {@code not_a_file}, {@code file_too_large}, {@code quota_exceeded}, {@code interpreter_unavailable},
 * {@code memory_budget_exhausted} (429), {@code disk_budget_exhausted} (507); the message
 * is one line for a person.
 */
public final class SessionException extends RuntimeException {
    private final String code;

    public SessionException(String code, String message) {
        super(message);
        this.code = code;
    }

    public String code() {
        return code;
    }
}
