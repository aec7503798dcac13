package dev.crucible.image;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageRef;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A pull a request started, on a platform thread of its own, that every request for the same image waits for, each
 * until its own deadline; the pull goes on when they stop waiting (it ends at the puller's read timeout if the
 * registry stalls). Its progress says, at a request's deadline, whether the registry is still sending (503
 * {@code image_pulling}: ask again) or has stalled (504 {@code image_pull_timeout}). Thread-safe.
 */
final class PendingPull implements ImagePuller.Progress {
    /** No byte for this long at a request's deadline while waiting for it: the registry has stalled, not slowed. */
    static final Duration STALLED = Duration.ofSeconds(1);

    final ImageRef ref;
    final CompletableFuture<Image> result = new CompletableFuture<>();
    private final Duration readTimeout;
    private volatile long lastNanos = System.nanoTime();
    private volatile String blob;
    private volatile long done;
    private volatile long size;
    private volatile int unpackingLayers = -1;
    /** The blobs whose bytes the pull waits for now (several layers download at once). */
    private final Set<String> downloading = ConcurrentHashMap.newKeySet();
    /** Whether a blob has started: before, the pull waits for the registry's manifest. */
    private volatile boolean blobs;
    private volatile Thread thread;

    PendingPull(ImageRef ref, Duration readTimeout) {
        this.ref = ref;
        this.readTimeout = readTimeout;
    }

    /** Runs {@code pull} on a new platform thread, completing {@link #result}; then {@code after}. */
    void start(Callable<Image> pull, Runnable after) {
        thread = Thread.ofPlatform().name("crucible-image-pull").daemon().start(() -> {
            try {
                result.complete(pull.call());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            } finally {
                after.run();
            }
        });
    }

    /** Interrupts the pull's thread: its blocked read ends, what arrived stays for the next pull. */
    void cancel() {
        Thread running = thread;
        if (running != null) {
            running.interrupt();
        }
    }

    @Override
    public void blobStarted(String digest, long size, long already) {
        blob = digest;
        this.size = size;
        done = already;
        if (already < size) {
            downloading.add(digest);
        }
        blobs = true;
        lastNanos = System.nanoTime();
    }

    @Override
    public void blobProgress(String digest, long done, long size) {
        blob = digest;
        this.done = done;
        this.size = size;
        if (done >= size) {
            downloading.remove(digest); // the last byte is in: syncing and storing it is the store's work
        }
        lastNanos = System.nanoTime();
    }

    @Override
    public void blobDone(String digest, long size, boolean fetched) {
        downloading.remove(digest); // until the next blob's download starts (a kept part is hashed first)
        lastNanos = System.nanoTime();
    }

    @Override
    public void unpacking(int layers) {
        unpackingLayers = layers;
        lastNanos = System.nanoTime();
    }

    /** Whether the pull waits for the registry now (a manifest, a blob's bytes), not for its own disk or hashing. */
    private boolean awaitingRegistry() {
        return unpackingLayers < 0 && (!blobs || !downloading.isEmpty());
    }

    /**
     * The answer for a request that waited {@code waited} for {@code reference} and the pull has not ended: 504 when
     * the pull waits for the registry, which has sent nothing for {@link #STALLED}; else (bytes arriving, or the
     * pull's own work: hashing, syncing, unpacking) 503 with Retry-After.
     */
    RequestException overdue(String reference, Duration waited) {
        long quiet = System.nanoTime() - lastNanos;
        String current = blob;
        if (awaitingRegistry() && quiet >= STALLED.toNanos()) {
            return new RequestException(ErrorCode.IMAGE_PULL_TIMEOUT, "registry " + ref.registry()
                    + " has sent nothing for " + seconds(quiet) + " s while pulling " + reference
                    + (current == null ? " (before its first blob)" : " (blob " + current + ", at byte " + done
                            + " of " + size + ")") + "; this request waited its " + waited.toMillis() + " ms. The"
                    + " pull gives up after " + seconds(readTimeout.toNanos()) + " s without data; a request after"
                    + " that pulls again, resuming what arrived");
        }
        String stage = unpackingLayers >= 0 ? "unpacking " + unpackingLayers + " layer(s)"
                : current == null ? "reading its manifest" : "blob " + current + ": " + megabytes(done) + " of "
                        + megabytes(size) + " MB";
        return new RequestException(ErrorCode.IMAGE_PULLING, "image " + reference + " is still being pulled (" + stage
                + ") after this request's " + waited.toMillis() + " ms; the pull goes on: ask again after Retry-After");
    }

    private static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e9);
    }

    private static String megabytes(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / 1e6);
    }
}
