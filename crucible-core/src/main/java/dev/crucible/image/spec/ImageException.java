package dev.crucible.image.spec;

import java.io.IOException;

/**
 * Why an image could not be pulled, imported, unpacked or found: a typed {@link Failure} (the CLI maps each to its
 * own exit code, the server to a JSON error) and a message that says what to do about it.
 */
public final class ImageException extends IOException {
    /** The kinds of image failure; each is one exit code of {@code crucible image} and one HTTP answer. */
    public enum Failure {
        /** The reference does not parse ({@code name[:tag][@sha256:…]}). */
        INVALID_REFERENCE,
        /** No such image in the store, or no such repository, tag or blob in the registry (404). */
        NOT_FOUND,
        /** The registry refused our credentials or an anonymous pull (401/403). */
        UNAUTHORIZED,
        /** The registry could not be reached, or answered with a server error. */
        UNREACHABLE,
        /** A blob or manifest does not hash to the digest that names it. */
        DIGEST_MISMATCH,
        /** A media type, platform, compression or archive layout that Crucible does not read. */
        UNSUPPORTED,
        /** A layer that tries to escape its root or breaks an unpacking rule (see the layer unpacker). */
        HOSTILE_LAYER,
        /** Past a size, entry-count, path-length or compression-ratio cap. */
        TOO_LARGE,
        /**
         * A build that cannot be done as written: a Dockerfile line Crucible does not build, a COPY out of its context,
         * a write where a sandbox mounts its own file systems.
         */
        INVALID_BUILD
    }

    private final Failure failure;

    public ImageException(Failure failure, String message) {
        super(message);
        this.failure = failure;
    }

    public ImageException(Failure failure, String message, Throwable cause) {
        super(message, cause);
        this.failure = failure;
    }

    public Failure failure() {
        return failure;
    }
}
