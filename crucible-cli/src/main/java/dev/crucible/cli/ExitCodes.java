package dev.crucible.cli;

/**
 * Exit codes of {@code crucible} for its own errors; each cause has its own code so scripts can tell them apart.
 * Without {@code --json}, {@code crucible run} otherwise exits with the program's own code.
 */
final class ExitCodes {
    /** Unknown option, missing argument. */
    static final int USAGE = 2;
    /** The program file or the stdin file does not exist or cannot be read. */
    static final int NO_INPUT = 66;
    /** The language is unknown or cannot be told from the file name. */
    static final int UNKNOWN_LANGUAGE = 67;
    /** The runtime is known but its tools are not installed. */
    static final int RUNTIME_UNAVAILABLE = 69;
    /** A limit is out of range, or the request is otherwise invalid. */
    static final int INVALID_REQUEST = 65;
    /** The host cannot run sandboxes (bubblewrap or libseccomp missing, user namespaces off). */
    static final int SANDBOX_UNAVAILABLE = 71;
    /** The sandbox failed while running (our fault). */
    static final int SANDBOX_ERROR = 70;
    /** The program ran past its time limit (as timeout(1)). */
    static final int TIMEOUT = 124;
    /** The program passed its memory limit. */
    static final int MEMORY_LIMIT = 137;
    /** The program wrote more than the output cap. */
    static final int OUTPUT_LIMIT = 125;
    /** The program did not compile. */
    static final int COMPILE_ERROR = 1;

    private ExitCodes() {}
}
