package dev.crucible.session.process;

/** A command that could not be run or followed, with why, as a sentence for the user. */
public final class CommandException extends RuntimeException {
    /** What went wrong, as the API maps it to an answer. */
    public enum Kind {
        /** The supervisor could not start it: no such program or directory (the user's to fix). */
        NOT_STARTED,
        /** The session runs as many commands as it may. */
        TOO_MANY,
        /** The command, its environment and its stdin are larger than one request may be. */
        TOO_LARGE,
        /** The process has ended, or its stdin was closed: nothing more reaches it. */
        STDIN_CLOSED,
        /** The process has not read what was written to its stdin before (the supervisor holds 1 MiB). */
        STDIN_FULL,
        /** The session's sandbox or its supervisor ended or stopped answering. */
        BROKEN
    }

    private final Kind kind;

    public CommandException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }
}
