package dev.crucible.cli.support;

/**
 * Exit codes of {@code crucible} for its own errors; each cause has its own code so scripts can tell them apart.
 * Without {@code --json}, {@code crucible run} otherwise exits with the program's own code.
 */
public final class ExitCodes {
    /** Unknown option, missing argument. */
    public static final int USAGE = 2;
    /** The program file or the stdin file does not exist or cannot be read. */
    public static final int NO_INPUT = 66;
    /** The language is unknown or cannot be told from the file name. */
    public static final int UNKNOWN_LANGUAGE = 67;
    /** The runtime is known but its tools are not installed. */
    public static final int RUNTIME_UNAVAILABLE = 69;
    /** A limit is out of range, or the request is otherwise invalid. */
    public static final int INVALID_REQUEST = 65;
    /** The host cannot run sandboxes (bubblewrap or libseccomp missing, user namespaces off). */
    public static final int SANDBOX_UNAVAILABLE = 71;
    /** The sandbox failed while running (our fault). */
    public static final int SANDBOX_ERROR = 70;
    /** The program ran past its time limit (as timeout(1)). */
    public static final int TIMEOUT = 124;
    /** The program passed its memory limit. */
    public static final int MEMORY_LIMIT = 137;
    /** The program wrote more than the output cap. */
    public static final int OUTPUT_LIMIT = 125;
    /** The program did not compile. */
    public static final int COMPILE_ERROR = 1;
    /** {@code crucible image}: no such image in the store, or no such repository, tag or blob in the registry. */
    public static final int IMAGE_NOT_FOUND = 68;
    /** {@code crucible image}: reading or writing the image store failed (disk full, permissions). */
    public static final int IMAGE_IO = 74;
    /** {@code crucible image pull}: the registry could not be reached or answered with a server error. */
    public static final int REGISTRY_UNREACHABLE = 75;
    /** {@code crucible image}: a blob or manifest does not hash to its digest. */
    public static final int DIGEST_MISMATCH = 76;
    /** {@code crucible image pull}: the registry refused the credentials or an anonymous pull. */
    public static final int REGISTRY_UNAUTHORIZED = 77;
    /** {@code crucible image}: a media type, platform, compression or archive Crucible does not read. */
    public static final int IMAGE_UNSUPPORTED = 79;
    /** {@code crucible image}: a layer tries to escape its root or breaks an unpacking rule. */
    public static final int HOSTILE_LAYER = 80;
    /** {@code crucible image}: past a size, entry-count, path-length or compression-ratio cap. */
    public static final int IMAGE_TOO_LARGE = 81;
    /** {@code crucible image build}: a step failed (exit code, signal or limit); nothing was committed. */
    public static final int BUILD_STEP_FAILED = 82;
    /**
     * {@code crucible eval dataset --url}: some samples got no verdict (the endpoint failed them, not their code); they
     * are not in the results file, and the same command again runs just them.
     */
    public static final int UNJUDGED = 83;
    /** {@code crucible eval merge}: a sample twice in a file, two verdicts for one sample, or a missing or unknown one. */
    public static final int MERGE_REFUSED = 84;
    /** {@code crucible eval dataset --url}: the endpoint did not answer /healthz at the start. */
    public static final int ENDPOINT_UNREACHABLE = 85;
    /** {@code crucible eval dataset --url}: the endpoint refused the token (401 or 403). */
    public static final int ENDPOINT_UNAUTHORIZED = 86;

    private ExitCodes() {}
}
