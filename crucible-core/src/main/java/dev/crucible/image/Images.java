package dev.crucible.image;

import dev.crucible.ErrorCode;
import dev.crucible.RequestException;
import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;

/**
 * The images an engine may run in: the store's, plus what the operator lets a request pull ({@code serve
 * --allow-pull}). An image in use is leased so that {@code crucible image prune} in another process leaves its root
 * alone. Thread-safe.
 */
public final class Images implements AutoCloseable {
    /**
     * What a request may pull.
     *
     * @param registries registries (host[:port], {@code docker.io} for Docker Hub) a request may pull from; empty: none
     * @param options the puller's options (its {@code maxBytes} is the per-image size cap)
     */
    public record PullPolicy(Set<String> registries, ImagePuller.Options options) {
        public PullPolicy {
            registries = Set.copyOf(registries);
        }

        /** Nothing is pulled on a request's behalf. */
        public static PullPolicy never() {
            return new PullPolicy(Set.of(), null);
        }

        boolean allows(ImageRef ref) {
            return options != null && registries.contains(ref.registry());
        }
    }

    private static final System.Logger LOG = System.getLogger("crucible.image");

    private final ImageStore store;
    private final PullPolicy pull;
    private final Map<String, Closeable> leases = new ConcurrentHashMap<>();
    private final Map<String, Object> pulling = new ConcurrentHashMap<>();
    /** Lookups that found an image, kept briefly: a request in an image must not read the store's files each time. */
    private final Map<String, Found> recent = new ConcurrentHashMap<>();
    private static final long RECENT_NANOS = 2_000_000_000L;

    private record Found(Image image, long atNanos) {}

    private Images(ImageStore store, PullPolicy pull) {
        this.store = store;
        this.pull = pull;
    }

    /** No store: every image reference is unknown. */
    public static Images none() {
        return new Images(null, PullPolicy.never());
    }

    public static Images of(ImageStore store, PullPolicy pull) {
        return new Images(store, pull);
    }

    /** The store, or null when there is none. */
    public ImageStore store() {
        return store;
    }

    /** The stored image {@code reference} names, if any (never pulls). */
    public Optional<Image> find(String reference) {
        if (store == null) {
            return Optional.empty();
        }
        Found found = recent.get(reference);
        if (found != null && System.nanoTime() - found.atNanos() < RECENT_NANOS) {
            return Optional.of(found.image());
        }
        try {
            Optional<Image> image = store.find(reference);
            image.ifPresent(i -> {
                lease(i);
                recent.put(reference, new Found(i, System.nanoTime()));
            });
            return image;
        } catch (ImageException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the image store " + store.dir(), e);
        }
    }

    /**
     * The image a request names: the stored one, else pulled when the operator allows its registry.
     *
     * @throws RequestException {@code invalid_request} for a reference that does not parse, {@code image_not_found}
     *     naming the pull command, or {@code image_pull_failed} when an allowed pull failed
     */
    public Image require(String reference) {
        ImageRef ref;
        try {
            ref = ImageRef.parse(reference);
        } catch (ImageException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
        Optional<Image> stored = find(reference);
        if (stored.isPresent()) {
            return stored.get();
        }
        if (store == null || !pull.allows(ref)) {
            throw new RequestException(ErrorCode.IMAGE_NOT_FOUND, "image " + reference + " is not in this server's "
                    + "store; run: crucible image pull " + reference
                    + (store == null ? "" : " (or let the server pull it: serve --allow-pull " + ref.registry() + ")"));
        }
        synchronized (pulling.computeIfAbsent(ref.canonical(), k -> new Object())) {
            Optional<Image> meanwhile = find(reference);
            if (meanwhile.isPresent()) {
                return meanwhile.get();
            }
            try {
                LOG.log(System.Logger.Level.INFO, "pulling " + ref + " for a request");
                Image image = pullOnPlatformThread(ref);
                lease(image);
                return image;
            } catch (ImageException e) {
                throw new RequestException(e.failure() == ImageException.Failure.NOT_FOUND ? ErrorCode.IMAGE_NOT_FOUND
                        : ErrorCode.IMAGE_PULL_FAILED, "cannot pull " + reference + ": " + e.getMessage());
            } catch (IOException e) {
                throw new RequestException(ErrorCode.IMAGE_PULL_FAILED, "cannot pull " + reference + ": " + e.getMessage());
            }
        }
    }

    /**
     * Pulls on a platform thread of its own: unpacking makes thousands of native calls (FFM downcalls pin a virtual
     * thread's carrier), and a request's virtual thread waits here without holding a carrier.
     */
    private Image pullOnPlatformThread(ImageRef ref) throws IOException {
        FutureTask<Image> task = new FutureTask<>(() -> new ImagePuller(pull.options()).pull(ref, store,
                ImagePuller.Progress.NONE));
        Thread.ofPlatform().name("crucible-image-pull").daemon().start(task);
        try {
            return task.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while pulling " + ref);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IOException(e.getCause());
        }
    }

    private void lease(Image image) {
        leases.computeIfAbsent(image.id(), id -> {
            try {
                return store.lease(image);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot lease image " + image.name() + ": " + e.getMessage());
                return () -> {};
            }
        });
    }

    /** Lets go of every lease: prune may remove what this engine used. */
    @Override
    public void close() {
        List<Closeable> held = new ArrayList<>(leases.values());
        leases.clear();
        for (Closeable c : held) {
            try {
                c.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "releasing an image lease: " + e.getMessage());
            }
        }
    }
}
