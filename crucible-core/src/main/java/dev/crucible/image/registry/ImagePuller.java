package dev.crucible.image.registry;

import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.stream.Collectors;

/**
 * Pulls an image from an OCI Distribution registry into an {@link ImageStore}, as {@code docker pull} does: the
 * manifest for the reference (from an index, the host's platform's), every blob not yet stored (a partial download a
 * killed pull left is resumed), then {@link ImageStore#commit} unpacks it and makes it visible. Every manifest is
 * verified against the digest that names it, every blob by the store. https is required except for loopback
 * registries and those listed as insecure. Immutable and thread-safe: pulls may run at once (each has its own
 * connections); the store lets writers of one blob take turns.
 */
public final class ImagePuller {
    /** The cap on an image config (read into memory); configs are kilobytes. */
    static final long MAX_CONFIG = 16L << 20;
    /** Layers downloaded at once (docker's and containerd's default). */
    static final int PARALLEL = 3;

    /**
     * @param insecureRegistries registries (host[:port]) that may be spoken to over plain HTTP besides loopback ones;
     *     null is none
     * @param maxBytes cap on the compressed bytes of one image (manifest, config and layers), or Long.MAX_VALUE
     * @param timeout connect and per-read timeout
     * @param credentials where logins come from; null is {@link RegistryCredentials#none()}
     */
    public record Options(Set<String> insecureRegistries, long maxBytes, Duration timeout,
            RegistryCredentials credentials) {
        public Options {
            insecureRegistries = insecureRegistries == null ? Set.of() : insecureRegistries.stream()
                    .map(RegistryCredentials::registryOf).collect(Collectors.toUnmodifiableSet());
            if (maxBytes <= 0) {
                throw new IllegalArgumentException("maxBytes must be positive, not " + maxBytes);
            }
            Objects.requireNonNull(timeout, "timeout");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be positive, not " + timeout);
            }
            credentials = credentials == null ? RegistryCredentials.none() : credentials;
        }
    }

    /** Receives progress; called from the pulling threads (layers are fetched several at a time). */
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

    /** What a pull fetched before committing: the manifest's digest and bytes, the config's bytes, the layers. */
    record Fetched(String digest, byte[] manifest, byte[] config, List<String> layers) {}

    private final Options options;

    public ImagePuller(Options options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    /**
     * Pulls {@code ref} (the host's platform from an index) and commits it to {@code store} under its name.
     *
     * @return the image as the store now shows it
     * @throws ImageException NOT_FOUND, UNAUTHORIZED, UNREACHABLE, DIGEST_MISMATCH, UNSUPPORTED, TOO_LARGE (over
     *     {@link Options#maxBytes}, before any blob is fetched), or the store's and unpacker's failures
     * @throws IOException the store's own I/O failures
     */
    public Image pull(ImageRef ref, ImageStore store, Progress progress) throws IOException {
        Fetched fetched = fetch(ref, store, progress);
        progress.unpacking(fetched.layers().size());
        return store.commit(ref, fetched.digest(), fetched.manifest(), fetched.config());
    }

    /** Fetches the manifest and stores every blob of {@code ref}; nothing is visible until a commit. */
    Fetched fetch(ImageRef ref, ImageStore store, Progress progress) throws IOException {
        try (RegistryClient client = new RegistryClient(ref, options)) {
            Manifests.Resolved resolved = Manifests.resolve(client, ref, ImageFormats.Platform.host());
            ImageFormats.Manifest manifest = resolved.manifest();
            checkSize(ref, resolved);
            BlobFetch blobs = new BlobFetch(client, store, ref, progress);
            blobs.fetch(manifest.config()); // first, alone: it authenticates the client for the layers
            fetchAll(blobs, manifest.layers());
            List<String> layers = manifest.layers().stream().map(ImageFormats.Descriptor::digest).toList();
            return new Fetched(resolved.digest(), resolved.bytes(), config(store, manifest.config(), ref), layers);
        }
    }

    /**
     * Fetches the layers, {@value #PARALLEL} at a time as docker and containerd do: a registry serves each blob at the
     * speed of one connection, and several fill the link. Every layer is tried; the first failure is thrown once all
     * have ended (what each fetched or kept stays for the next pull). An interrupt stops them all.
     */
    private static void fetchAll(BlobFetch blobs, List<ImageFormats.Descriptor> layers) throws IOException {
        if (layers.size() <= 1) {
            for (ImageFormats.Descriptor layer : layers) {
                blobs.fetch(layer);
            }
            return;
        }
        Semaphore turns = new Semaphore(PARALLEL);
        List<Future<Boolean>> running = new ArrayList<>();
        try (var threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon()
                .name("crucible-image-layer-", 0).factory())) {
            for (ImageFormats.Descriptor layer : layers) {
                running.add(threads.submit(() -> {
                    turns.acquire();
                    try {
                        return blobs.fetch(layer);
                    } finally {
                        turns.release();
                    }
                }));
            }
            IOException first = null;
            for (Future<Boolean> layer : running) {
                try {
                    layer.get();
                } catch (InterruptedException e) {
                    running.forEach(other -> other.cancel(true)); // their blocked reads end; what arrived is kept
                    Thread.currentThread().interrupt(); // and the executor's close stops at once
                    throw new InterruptedIOException("the pull was interrupted");
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof IOException io) {
                        first = first == null ? io : first;
                    } else if (cause instanceof InterruptedException) {
                        first = first == null ? new InterruptedIOException("the pull was interrupted") : first;
                    } else if (cause instanceof RuntimeException r) {
                        throw r;
                    } else {
                        throw new IllegalStateException(cause);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
        }
    }

    /** TOO_LARGE before anything is fetched when the manifest's sizes add up past the cap. */
    private void checkSize(ImageRef ref, Manifests.Resolved resolved) throws ImageException {
        ImageFormats.Manifest manifest = resolved.manifest();
        if (manifest.config().size() < 0 || manifest.config().size() > MAX_CONFIG) {
            throw new ImageException(ImageException.Failure.TOO_LARGE, "the config of " + ref + " is "
                    + manifest.config().size() + " bytes: Crucible reads configs up to " + (MAX_CONFIG >> 20) + " MiB");
        }
        Map<String, Long> blobs = new LinkedHashMap<>();
        blobs.put(manifest.config().digest(), manifest.config().size());
        for (ImageFormats.Descriptor layer : manifest.layers()) {
            if (layer.size() < 0) {
                throw new ImageException(ImageException.Failure.UNSUPPORTED, "layer " + layer.digest() + " of " + ref
                        + " has a negative size: the manifest is broken");
            }
            blobs.put(layer.digest(), layer.size());
        }
        long total = resolved.bytes().length;
        for (long size : blobs.values()) {
            total = total > Long.MAX_VALUE - size ? Long.MAX_VALUE : total + size;
        }
        if (total > options.maxBytes()) {
            throw new ImageException(ImageException.Failure.TOO_LARGE, ref + " is " + megabytes(total)
                    + " compressed, over the cap of " + megabytes(options.maxBytes()) + ": raise the cap (--max-bytes,"
                    + " or the server's image size limit) or pull a smaller image");
        }
    }

    private static byte[] config(ImageStore store, ImageFormats.Descriptor config, ImageRef ref) throws IOException {
        try {
            return Files.readAllBytes(store.blob(config.digest()));
        } catch (NoSuchFileException e) {
            throw new ImageException(ImageException.Failure.NOT_FOUND, "the config of " + ref + " left the store"
                    + " while pulling (a prune?): pull again", e);
        }
    }

    private static String megabytes(long bytes) {
        return bytes < 1_000_000 ? bytes + " bytes" : String.format(Locale.ROOT, "%.1f MB (%d bytes)", bytes / 1e6,
                bytes);
    }
}
