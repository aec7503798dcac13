package dev.crucible.client;

/**
 * Every failure of a {@link CrucibleClient} call: an error answer of the server ({@link #status()} is its HTTP
 * status, {@link #code()} its error code, e.g. {@code 404 session_not_found}), or no answer at all ({@link #status()}
 * 0, and {@link #code()} {@code connection_failed}, {@code timeout} or {@code interrupted}).
 */
public final class CrucibleException extends RuntimeException {
    private final int status;
    private final String code;

    public CrucibleException(int status, String code, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.code = code;
    }

    /** The HTTP status of the error answer, or 0 when there was none. */
    public int status() {
        return status;
    }

    /** The error code: the server's ({@code invalid_request}, {@code session_not_found}, …) or the client's. */
    public String code() {
        return code;
    }

    @Override
    public String toString() {
        return "CrucibleException[" + (status == 0 ? "" : status + " ") + code + ": " + getMessage() + "]";
    }
}
