package dev.crucible.image.store;

import dev.crucible.image.layer.LayerUnpacker;
import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The content-addressed image store under a directory (normally {@code <data dir>/images}):
 * <pre>
 *   blobs/sha256/&lt;hex&gt;       verified blobs (layers as fetched, configs, manifests), 0644, shared by every image
 *   partial/sha256-&lt;hex&gt;     downloads in progress, resumed by {@link #openBlob} (0700 dir)
 *   staging/&lt;id&gt;.&lt;random&gt;/   roots being unpacked, and image builds (0711 dir: a build's sandbox passes
 *                             through); what a killed process left is removed by {@link #open}
 *   roots/&lt;id hex&gt;/          one unpacked root per image id (config digest), 0755, complete once visible
 *   roots/&lt;id hex&gt;.lock      held shared by whoever uses or builds the root ({@link #lease}), exclusively by prune
 *   images/&lt;manifest hex&gt;.json  the {@link Image} metadata
 *   names.json                canonical name → manifest digest
 *   .lock                     held exclusively while names or metadata change, and by prune
 * </pre>
 * Safe for concurrent use by threads and by processes ({@code crucible serve} and the {@code crucible image} CLI on
 * one store): files appear by atomic rename, shared state changes under file locks. Methods never return null.
 */
public final class ImageStore {
    private final Path dir;
    private final Path blobs;
    private final Path partial;
    private final Path roots;
    private final StoreMetadata metadata;
    private final RootBuilder builder;

    private ImageStore(Path dir, LayerUnpacker.Caps caps) {
        this.dir = dir;
        this.blobs = dir.resolve("blobs").resolve("sha256");
        this.partial = dir.resolve("partial");
        this.roots = dir.resolve("roots");
        this.metadata = new StoreMetadata(dir);
        this.builder = new RootBuilder(roots, dir.resolve("staging"), caps, this::blob);
    }

    /** Opens (creating) the store at {@code dir} with the default unpacking caps. */
    public static ImageStore open(Path dir) throws IOException {
        return open(dir, LayerUnpacker.Caps.defaults());
    }

    /**
     * Opens (creating) the store at {@code dir}, usually {@code <data dir>/images}, unpacking with {@code caps}; removes
     * the staging dirs a killed process left.
     */
    public static ImageStore open(Path dir, LayerUnpacker.Caps caps) throws IOException {
        Path abs = dir.toAbsolutePath().normalize();
        StoreFiles.directory(abs, StoreFiles.DIR_OPEN);
        StoreFiles.directory(abs.resolve("blobs"), StoreFiles.DIR_OPEN);
        StoreFiles.directory(abs.resolve("blobs").resolve("sha256"), StoreFiles.DIR_OPEN);
        StoreFiles.directory(abs.resolve("roots"), StoreFiles.DIR_OPEN);
        StoreFiles.directory(abs.resolve("images"), StoreFiles.DIR_OPEN);
        StoreFiles.directory(abs.resolve("partial"), StoreFiles.DIR_PRIVATE);
        StoreFiles.directory(abs.resolve("staging"), StoreFiles.DIR_SEARCHABLE);
        ImageStore store = new ImageStore(abs, caps);
        store.builder.cleanLeftovers();
        return store;
    }

    public Path dir() {
        return dir;
    }

    /**
     * The image a reference names: a short or canonical name ({@code python:3.12}), {@code name@sha256:…}, a manifest
     * digest, or a hex prefix of at least 12 digits of an id or manifest digest (one that fits two images is no match).
     * Only named images are found; the image carries the name it was found by (or its first name).
     */
    public Optional<Image> find(String reference) throws IOException {
        Map<String, String> names = metadata.names();
        Optional<ImageLookup.Match> match = ImageLookup.resolve(names, reference, metadata::image);
        return match.isEmpty() ? Optional.empty() : loaded(match.get().names().getFirst(), match.get().digest());
    }

    /** Every named image (one entry per name), sorted by name. */
    public List<Image> list() throws IOException {
        List<Image> images = new ArrayList<>();
        for (Map.Entry<String, String> name : metadata.names().entrySet()) {
            loaded(name.getKey(), name.getValue()).ifPresent(images::add);
        }
        return images;
    }

    /** Whether a verified blob with this digest is stored (false for a malformed digest). */
    public boolean hasBlob(String digest) {
        return Digests.valid(digest) && Files.isRegularFile(blobs.resolve(digest.substring(7)), LinkOption.NOFOLLOW_LINKS);
    }

    /**
     * The file of a verified blob (read-only; it may not exist, see {@link #hasBlob}).
     *
     * @throws IllegalArgumentException if {@code digest} is not {@code sha256:} and 64 lowercase hex digits
     */
    public Path blob(String digest) {
        if (!Digests.valid(digest)) {
            throw new IllegalArgumentException("not a sha256 digest: " + Digests.clip(digest));
        }
        return blobs.resolve(digest.substring(7));
    }

    /**
     * A writer for the blob {@code digest}, resuming a partial download a killed pull left: {@link BlobWriter#offset()}
     * bytes are already there. Writers of one blob take turns (a second waits for the first to close). A blob already
     * stored gets a writer whose offset is its size, that ignores what is written and whose commit returns it.
     *
     * @throws ImageException UNSUPPORTED for a digest of another algorithm than sha256, INVALID_REFERENCE for garbage
     */
    public BlobWriter openBlob(String digest) throws IOException {
        String hex = Digests.hex(digest);
        return PartialBlob.open(digest, partial.resolve("sha256-" + hex), blobs.resolve(hex));
    }

    /**
     * Stores a blob whose digest is not known ahead (a {@code docker save} layer), hashing it as it is copied; returns
     * its digest. The bytes become visible only once complete.
     */
    public String putBlob(InputStream in) throws IOException {
        Path temp = partial.resolve("upload-" + UUID.randomUUID());
        try {
            MessageDigest hash = Digests.sha256();
            try (OutputStream out = new DigestOutputStream(Files.newOutputStream(temp), hash)) {
                in.transferTo(out);
            }
            String digest = Digests.of(hash);
            if (!hasBlob(digest)) {
                try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.WRITE)) {
                    channel.force(true);
                }
                Files.setPosixFilePermissions(temp, StoreFiles.FILE_READABLE);
                Files.move(temp, blob(digest), StandardCopyOption.ATOMIC_MOVE);
                StoreFiles.syncDirectory(blobs);
            }
            return digest;
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    /**
     * Makes an image visible under {@code name} once its manifest, config and every layer blob are stored: checks the
     * manifest and config (their bytes must hash to their digests), unpacks the layers into a staging root (unless an
     * image with the same id has a root), renames it into place, stores the manifest and config as blobs, then writes
     * the metadata and the name. Nothing is visible if this throws. The name is {@code name} without its digest when
     * it has a tag ({@link ImageRef#canonical()} otherwise); a name already used is moved to this image.
     *
     * @throws ImageException DIGEST_MISMATCH (a layer that does not unpack to its config's diff_id included),
     *     UNSUPPORTED (media types, platform, a config whose diff_ids do not count the layers), NOT_FOUND (a layer
     *     blob is not stored), or the unpacker's HOSTILE_LAYER and TOO_LARGE
     */
    public Image commit(ImageRef name, String manifestDigest, byte[] manifest, byte[] config) throws IOException {
        Digests.verify(manifestDigest, manifest, "manifest");
        ImageFormats.Manifest m = ImageFormats.manifest(manifest, manifestDigest);
        String configDigest = m.config().digest();
        Digests.verify(configDigest, config, "config");
        ImageFormats.Config c = ImageFormats.config(config, configDigest);
        List<String> layers = m.layers().stream().map(ImageFormats.Descriptor::digest).toList();
        if (c.diffIds().size() != layers.size()) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, "config " + configDigest + " lists "
                    + c.diffIds().size() + " diff_ids but manifest " + manifestDigest + " has " + layers.size()
                    + " layers: every layer must be named by the config it was built with");
        }
        requireLayers(layers, manifestDigest);
        String idHex = Digests.hex(configDigest);
        Image parent = parentOf(layers, c.diffIds());
        try (Closeable lease = leaseRoot(idHex, false);
                Closeable parentLease = parent == null ? null : leaseRoot(Digests.hex(parent.id()), true)) {
            Path root = builder.build(idHex, layers, c.diffIds(), parent == null ? null
                    : roots.resolve(Digests.hex(parent.id())));
            return metadata.locked(() -> {
                requireLayers(layers, manifestDigest); // a prune may have run while we unpacked
                putBytes(manifestDigest, manifest);
                putBytes(configDigest, config);
                Image image = describe(ImageLookup.key(name), manifestDigest, configDigest, root, c, layers);
                metadata.writeImage(image);
                TreeMap<String, String> names = metadata.names();
                names.put(image.name(), manifestDigest);
                metadata.writeNames(names);
                return image;
            });
        }
    }

    /**
     * An image of this store whose layers are {@code layers} but the last, with the same diff_ids, and whose root is
     * unpacked: a new root can start from a copy of it (an image build's, a session's commit, a pull of an image over
     * a base the store has) and unpack only the last layer. Null when there is none.
     */
    private Image parentOf(List<String> layers, List<String> diffIds) throws IOException {
        if (layers.size() < 2) {
            return null;
        }
        for (Image image : list()) {
            if (image.layers().equals(layers.subList(0, layers.size() - 1))
                    && Files.isDirectory(roots.resolve(Digests.hex(image.id())), LinkOption.NOFOLLOW_LINKS)
                    && ImageFormats.config(smallBlob(image.id()), image.id()).diffIds()
                            .equals(diffIds.subList(0, diffIds.size() - 1))) {
                return image;
            }
        }
        return null;
    }

    /**
     * A private copy of {@code image}'s root for an image build: a new directory {@code staging/<id hex>.build-<random>}
     * (0711, so that a sandbox's uid can reach the copy in it) whose {@code root} holds the image's layers unpacked
     * afresh, each checked against its diff_id. The caller holds the image's {@link #lease} until it has deleted the
     * directory ({@link StoreFiles#deleteTree}); a killed build's is removed by the next {@link #open} once the lease is free.
     */
    public Path unpackCopy(Image image) throws IOException {
        String idHex = Digests.hex(image.id());
        List<String> diffIds = ImageFormats.config(smallBlob(image.id()), image.id()).diffIds();
        requireLayers(image.layers(), image.digest());
        Path dir = builder.stage(idHex, "build-");
        try {
            StoreFiles.directory(dir, StoreFiles.DIR_SEARCHABLE);
            builder.unpack(dir.resolve("root"), image.layers(), diffIds);
            return dir;
        } catch (IOException | RuntimeException e) {
            StoreFiles.deleteTreeAfter(dir, e);
            throw e;
        }
    }

    /** The bytes of a stored manifest or config (at most {@value ImageFormats#MAX_DOCUMENT} bytes). */
    public byte[] smallBlob(String digest) throws IOException {
        return ImageFormats.readDocument(blob(digest), digest);
    }

    /**
     * Removes the name a reference gives (or, for a digest or id prefix, every name of that image); the blobs and the
     * root stay until {@link #prune}. Returns the images as they were named.
     *
     * @throws ImageException NOT_FOUND if the reference names no image
     */
    public List<Image> remove(String reference) throws IOException {
        return metadata.locked(() -> {
            TreeMap<String, String> names = metadata.names();
            ImageLookup.Match match = ImageLookup.resolve(names, reference, metadata::image)
                    .orElseThrow(() -> notFound(reference));
            List<Image> removed = new ArrayList<>();
            for (String key : match.names()) {
                loaded(key, match.digest()).ifPresent(removed::add);
                names.remove(key);
            }
            metadata.writeNames(names);
            return removed;
        });
    }

    /**
     * Deletes what no name references: image metadata, roots (except those leased, see {@link #lease}), blobs, and
     * partial downloads untouched for a day. A pull that has stored blobs but not yet committed loses them and fails
     * with NOT_FOUND; pulling again fetches them.
     */
    public Pruned prune() throws IOException {
        return metadata.locked(() -> new StorePruner(dir, metadata).prune());
    }

    /** What {@link #prune} removed and what it left because a server uses it. */
    public record Pruned(int images, int roots, int blobs, int partials, int rootsInUse, long bytesFreed) {}

    /**
     * Holds the image's root against {@link #prune} (a shared lock on {@code roots/<id hex>.lock}, between processes
     * too) until closed; a server holds one while sandboxes run in the root.
     *
     * @throws ImageException NOT_FOUND if the root is gone (pruned meanwhile)
     */
    public Closeable lease(Image image) throws IOException {
        String idHex = Digests.hex(image.id());
        if (!Files.isDirectory(roots.resolve(idHex), LinkOption.NOFOLLOW_LINKS)) {
            throw rootGone(idHex);
        }
        return leaseRoot(idHex, true);
    }

    private static ImageException rootGone(String idHex) {
        return new ImageException(ImageException.Failure.NOT_FOUND, "the root of image sha256:" + idHex
                + " was pruned; pull or import the image again");
    }

    private Closeable leaseRoot(String idHex, boolean rootMustExist) throws IOException {
        Path lockFile = RootBuilder.lockOf(roots, idHex);
        while (true) {
            Closeable lease = FileLocks.shared(lockFile);
            // a prune elsewhere deletes the root and then its lock file while holding it: if we locked a deleted
            // file, lock the new one
            if (Files.exists(lockFile)) {
                if (rootMustExist && !Files.isDirectory(roots.resolve(idHex), LinkOption.NOFOLLOW_LINKS)) {
                    lease.close();
                    throw rootGone(idHex);
                }
                return lease;
            }
            lease.close();
        }
    }

    private Optional<Image> loaded(String name, String digest) throws IOException {
        Optional<Image> stored = metadata.image(digest);
        if (stored.isEmpty()) {
            return stored;
        }
        Image i = stored.get();
        return Optional.of(new Image(name, i.digest(), i.id(), roots.resolve(Digests.hex(i.id())), i.env(),
                i.workingDir(), i.entrypoint(), i.cmd(), i.platform(), i.size(), i.created(), i.layers()));
    }

    private Image describe(String name, String digest, String id, Path root, ImageFormats.Config c, List<String> layers)
            throws IOException {
        long size = 0;
        for (String layer : layers) {
            size += Files.size(blob(layer));
        }
        ImageFormats.Run run = c.run();
        Instant created = metadata.image(digest).map(Image::created).orElseGet(Instant::now);
        return new Image(name, digest, id, root, orEmpty(run.env()),
                run.workingDir() == null || run.workingDir().isEmpty() ? null : run.workingDir(),
                orEmpty(run.entrypoint()), orEmpty(run.cmd()), c.platform().toString(), size, created, layers);
    }

    private void requireLayers(List<String> layers, String manifestDigest) throws ImageException {
        for (String layer : layers) {
            if (!hasBlob(layer)) {
                throw new ImageException(ImageException.Failure.NOT_FOUND, "layer " + layer + " of manifest "
                        + manifestDigest + " is not in the store; pull or import the image again");
            }
        }
    }

    private void putBytes(String digest, byte[] bytes) throws IOException {
        if (!hasBlob(digest)) {
            try (BlobWriter writer = openBlob(digest)) {
                writer.discard();
                writer.stream().write(bytes);
                writer.commit();
            }
        }
    }

    private static List<String> orEmpty(List<String> list) {
        return list == null ? List.of() : list.stream().filter(Objects::nonNull).toList();
    }

    /** NOT_FOUND for a reference that names no image of the store, saying how to list and fetch images. */
    public static ImageException notFound(String reference) {
        return new ImageException(ImageException.Failure.NOT_FOUND, "no image '" + Digests.clip(reference)
                + "' in the store; `crucible image ls` lists the images, `crucible image pull` fetches one");
    }
}
