package dev.crucible.image;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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

    /** Where the store is or will be; null: no store at all. */
    private final Path dir;
    /** The store, once opened: at once, or when {@link #dir} first exists (another process made it). */
    private volatile ImageStore store;
    private final PullPolicy pull;
    private final Map<String, Closeable> leases = new ConcurrentHashMap<>();
    /** The pulls under way, by canonical reference. */
    private final Map<String, PendingPull> pulling = new ConcurrentHashMap<>();
    /** Lookups that found an image, kept briefly: a request in an image must not read the store's files each time. */
    private final Map<String, Found> recent = new ConcurrentHashMap<>();
    private static final long RECENT_NANOS = 2_000_000_000L;

    private record Found(Image image, long atNanos) {}

    private Images(Path dir, ImageStore store, PullPolicy pull) {
        this.dir = dir;
        this.store = store;
        this.pull = pull;
    }

    /** No store: every image reference is unknown. */
    public static Images none() {
        return new Images(null, null, PullPolicy.never());
    }

    public static Images of(ImageStore store, PullPolicy pull) {
        return new Images(store.dir(), store, pull);
    }

    /**
     * The store at {@code dir}, opened now when it exists (or when {@code pull} lets requests pull, creating it), else
     * as soon as it does: an image that {@code crucible image pull} or {@code import} puts into a fresh data dir while
     * a server runs is found by the server's next request, with no restart. Nothing is created before then.
     *
     * @throws IOException when an existing store cannot be opened
     */
    public static Images at(Path dir, PullPolicy pull) throws IOException {
        boolean now = Files.isDirectory(dir) || !pull.registries().isEmpty();
        return new Images(dir, now ? ImageStore.open(dir) : null, pull);
    }

    /** The store, or null when there is none (yet). */
    public ImageStore store() {
        ImageStore opened = store;
        if (opened != null || dir == null || !Files.isDirectory(dir)) {
            return opened;
        }
        synchronized (this) {
            if (store == null) {
                try {
                    store = ImageStore.open(dir);
                    LOG.log(System.Logger.Level.INFO, "the image store " + dir + " appeared: its images are served");
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot open the image store " + dir, e);
                }
            }
            return store;
        }
    }

    /** An image was committed (a build, a session's commit): a name looked up lately may name another image now. */
    public void committed() {
        recent.clear();
    }

    /** The stored image {@code reference} names, if any (never pulls). */
    public Optional<Image> find(String reference) {
        ImageStore store = store();
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
     * The image a request names: the stored one, else pulled when the operator allows its registry, waiting for the
     * pull as long as it takes (a pull ends at the latest at its read timeout without data). For requests with a
     * deadline, {@link #require(String, Duration)}.
     */
    public Image require(String reference) {
        return require(reference, null);
    }

    /**
     * The image a request names: the stored one, else pulled when the operator allows its registry, on a platform
     * thread of the pull's own that every request for the image waits for, each at most {@code wait}. A request that
     * stops waiting leaves the pull going: a later one finds the image, or the pull's failure, or (once it failed)
     * pulls again, resuming what arrived.
     *
     * @param wait how long this request waits for a pull; null: until it ends
     * @throws RequestException {@code invalid_request} for a reference that does not parse, {@code image_not_found}
     *     naming the pull command, {@code image_pull_failed} when an allowed pull failed; past {@code wait}
     *     {@code image_pulling} (503, Retry-After) while the registry sends, {@code image_pull_timeout} (504) when it
     *     has stalled
     */
    public Image require(String reference, Duration wait) {
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
        if (store() == null || !pull.allows(ref)) {
            throw new RequestException(ErrorCode.IMAGE_NOT_FOUND, "image " + reference + " is not in this server's "
                    + "store; run: crucible image pull " + reference
                    + (dir == null ? "" : " (or let the server pull it: serve --allow-pull " + ref.registry() + ")"));
        }
        PendingPull pending = pullOnPlatformThread(reference, ref);
        try {
            Image image = wait == null ? pending.result.get()
                    : pending.result.get(Math.max(0, wait.toNanos()), TimeUnit.NANOSECONDS);
            lease(image);
            return image;
        } catch (TimeoutException e) {
            throw pending.overdue(reference, wait);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted while waiting for the pull of " + reference);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RequestException re) {
                throw re;
            }
            boolean missing = cause instanceof ImageException ie && ie.failure() == ImageException.Failure.NOT_FOUND;
            throw new RequestException(missing ? ErrorCode.IMAGE_NOT_FOUND : ErrorCode.IMAGE_PULL_FAILED, "cannot pull "
                    + reference + ": " + (cause.getMessage() != null ? cause.getMessage() : cause.toString()));
        }
    }

    /**
     * The pull of {@code ref} under way, or one started now on a platform thread of its own: unpacking makes thousands
     * of native calls (FFM downcalls pin a virtual thread's carrier), and the requests' virtual threads only wait.
     */
    private PendingPull pullOnPlatformThread(String reference, ImageRef ref) {
        String key = ref.canonical();
        PendingPull fresh = new PendingPull(ref, pull.options().timeout());
        PendingPull running = pulling.putIfAbsent(key, fresh);
        if (running != null) {
            return running;
        }
        Optional<Image> meanwhile = find(reference); // a pull that ended just before this one was started
        if (meanwhile.isPresent()) {
            fresh.result.complete(meanwhile.get());
            pulling.remove(key, fresh);
            return fresh;
        }
        LOG.log(System.Logger.Level.INFO, "pulling " + ref + " for a request");
        fresh.start(() -> {
            try {
                Image image = new ImagePuller(pull.options()).pull(ref, store(), fresh);
                LOG.log(System.Logger.Level.INFO, "pulled " + ref);
                return image;
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot pull " + ref + ": " + e.getMessage());
                throw e;
            }
        }, () -> pulling.remove(key, fresh)); // after the result: a request in between finds it, never a second pull
        return fresh;
    }

    private void lease(Image image) {
        leases.computeIfAbsent(image.id(), id -> {
            try {
                return store().lease(image);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot lease image " + image.name() + ": " + e.getMessage());
                return () -> {};
            }
        });
    }

    /** Lets go of every lease (prune may remove what this engine used) and stops the pulls under way. */
    @Override
    public void close() {
        pulling.values().forEach(PendingPull::cancel);
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
