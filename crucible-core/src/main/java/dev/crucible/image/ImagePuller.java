package dev.crucible.image;

import java.io.IOException;
import java.time.Duration;
import java.util.Set;

/**
 * Pulls an image from an OCI Distribution registry into an {@link ImageStore}. SKELETON: comes with issue 13.
 */
public final class ImagePuller {
    /**
     * @param insecureRegistries registries (host[:port]) that may be spoken to over plain HTTP besides loopback ones
     * @param maxBytes cap on the compressed bytes of one image (manifest, config and layers), or Long.MAX_VALUE
     * @param timeout connect and per-read timeout
     * @param credentials where logins come from
     */
    public record Options(Set<String> insecureRegistries, long maxBytes, Duration timeout, RegistryCredentials credentials) {}

    /** Receives progress; called from the pulling thread. */
    public interface Progress {
        Progress NONE = new Progress() {};

        /** A blob's download starts ({@code already} bytes were kept from an interrupted pull). */
        default void blobStarted(String digest, long size, long already) {}

        /** More bytes of a blob arrived. */
        default void blobProgress(String digest, long done, long size) {}

        /** A blob is verified and stored (or was already stored). */
        default void blobDone(String digest, long size, boolean fetched) {}

        /** All blobs are stored; the layers are being unpacked. */
        default void unpacking(int layers) {}
    }

    private final Options options;

    public ImagePuller(Options options) {
        this.options = options;
    }

    /** Pulls {@code ref} (the host's platform from an index) and commits it to {@code store} under its name. */
    public Image pull(ImageRef ref, ImageStore store, Progress progress) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }
}
