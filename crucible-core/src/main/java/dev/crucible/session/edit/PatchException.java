package dev.crucible.session.edit;

/** A diff that does not apply: its message says which line and why, for the model to fix and send again. */
public final class PatchException extends IllegalArgumentException {
    PatchException(String message) {
        super(message);
    }
}
