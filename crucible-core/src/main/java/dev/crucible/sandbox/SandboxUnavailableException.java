package dev.crucible.sandbox;

/** The host cannot run sandboxes; the message is one line that says what is missing and what to install. */
public final class SandboxUnavailableException extends RuntimeException {
    public SandboxUnavailableException(String message) {
        super(message);
    }

    public SandboxUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
