package dev.crucible.image.archive;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.BlobWriter;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * The images of an OCI image layout ({@code oci-layout}, {@code index.json}, {@code blobs/sha256/…}), from a directory or
 * a tar. Each entry of the index is an image, or a nested index of which the host's platform is taken. Names come from
 * the entry's annotations: {@code io.containerd.image.name} (Docker 25+ and containerd write the full name), else
 * {@code org.opencontainers.image.ref.name} when it is a full reference ({@code example.com/team/app:1.0}). A bare tag
 * ({@code 3.12}, as {@code skopeo copy … oci:DIR:3.12} writes) says no repository, so such an image needs
 * {@code --tag NAME}; Crucible does not guess a repository from a file name.
 */
final class OciLayoutImport {
    static final String REF_NAME = "org.opencontainers.image.ref.name";
    static final String CONTAINERD_NAME = "io.containerd.image.name";

    /** Where the layout's blobs come from. */
    interface Blobs {
        /** The bytes of a small blob (index, manifest, config), verified against its digest. */
        byte[] read(String digest) throws IOException;

        /** Makes sure the blob is in the store, verified. */
        void store(String digest) throws IOException;
    }

    /** An image of the layout to import: its manifest's descriptor and the name it is to get. */
    private record Chosen(ImageFormats.Descriptor manifest, ImageRef name) {}

    private OciLayoutImport() {}

    static List<Image> importAll(byte[] layout, byte[] index, Blobs blobs, ImageStore store, ImageRef tag, String source)
            throws IOException {
        checkLayout(layout, source);
        List<Chosen> chosen = choose(ImageFormats.index(index, "index.json of " + source), blobs, tag, source);
        List<Image> images = new ArrayList<>();
        for (Chosen c : chosen) {
            String digest = c.manifest().digest();
            byte[] manifest = blobs.read(digest);
            ImageFormats.Manifest m = ImageFormats.manifest(manifest, digest);
            blobs.store(m.config().digest());
            for (ImageFormats.Descriptor layer : m.layers()) {
                blobs.store(layer.digest());
            }
            images.add(store.commit(c.name(), digest, manifest, blobs.read(m.config().digest())));
        }
        return images;
    }

    private static void checkLayout(byte[] layout, String source) throws ImageException {
        try {
            JsonNode version = ImageFormats.JSON.readTree(layout).get("imageLayoutVersion");
            if (version != null && version.isString() && version.asString().startsWith("1.")) {
                return;
            }
        } catch (JacksonException e) {
            // falls through to the refusal
        }
        throw new ImageException(ImageException.Failure.UNSUPPORTED, "the oci-layout file of " + source
                + " does not say imageLayoutVersion 1.x: not an OCI image layout Crucible reads");
    }

    /** The images to import with their names, each manifest once; refuses before anything is committed. */
    private static List<Chosen> choose(ImageFormats.Index index, Blobs blobs, ImageRef tag, String source)
            throws IOException {
        ImageFormats.Platform host = ImageFormats.Platform.host();
        Map<String, Chosen> chosen = new LinkedHashMap<>();
        List<String> skipped = new ArrayList<>();
        for (ImageFormats.Descriptor entry : index.manifests()) {
            ImageFormats.Descriptor manifest = ImageFormats.isIndex(entry.mediaType())
                    ? forHost(entry, blobs, host) : entry;
            if (manifest == null || manifest.platform() != null && !manifest.platform().runsOn(host)) {
                skipped.add(entry.digest() + (manifest == null ? "" : " (" + manifest.platform() + ")"));
                continue;
            }
            Digests.hex(manifest.digest());
            ImageRef name = tag != null ? tag : nameOf(entry, source);
            chosen.putIfAbsent(manifest.digest() + " " + name, new Chosen(manifest, name));
        }
        if (chosen.isEmpty()) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, source + " holds no image for " + host
                    + (skipped.isEmpty() ? "" : " (it has " + String.join(", ", skipped) + ")"));
        }
        if (tag != null && chosen.values().stream().map(c -> c.manifest().digest()).distinct().count() > 1) {
            throw new ImageException(ImageException.Failure.INVALID_REFERENCE, source + " holds " + chosen.size()
                    + " images and --tag names one: import it without --tag to keep the names its index gives them");
        }
        return List.copyOf(chosen.values());
    }

    /** The host's image of a nested index, or null. */
    private static ImageFormats.Descriptor forHost(ImageFormats.Descriptor entry, Blobs blobs,
            ImageFormats.Platform host) throws IOException {
        ImageFormats.Index nested = ImageFormats.index(blobs.read(entry.digest()), "index " + entry.digest());
        for (ImageFormats.Descriptor d : nested.manifests()) {
            if (!ImageFormats.isIndex(d.mediaType()) && d.platform() != null && d.platform().runsOn(host)) {
                return d;
            }
        }
        return null;
    }

    private static ImageRef nameOf(ImageFormats.Descriptor entry, String source) throws ImageException {
        String full = entry.annotation(CONTAINERD_NAME);
        String ref = entry.annotation(REF_NAME);
        if (full == null && ref != null && (ref.contains("/") || ref.contains(":"))) {
            full = ref;
        }
        if (full != null) {
            return ImageRef.parse(full);
        }
        throw new ImageException(ImageException.Failure.INVALID_REFERENCE, "image " + entry.digest() + " of " + source
                + (ref == null ? " has no name" : " is named only by the tag '" + Digests.clip(ref) + "'")
                + ": give its name with --tag NAME" + (ref == null ? "" : " (e.g. --tag REPOSITORY:" + Digests.clip(ref) + ")"));
    }

    /** The blobs of a layout directory: read from {@code DIR/blobs/sha256/<hex>}, verified as they are stored. */
    static Blobs directory(Path dir, ImageStore store) {
        return new Blobs() {
            @Override
            public byte[] read(String digest) throws IOException {
                byte[] bytes = ImageFormats.readDocument(file(digest), "blob " + digest + " of " + dir);
                Digests.verify(digest, bytes, "blob of " + dir);
                return bytes;
            }

            @Override
            public void store(String digest) throws IOException {
                Path file = file(digest);
                if (store.hasBlob(digest)) {
                    return;
                }
                try (BlobWriter writer = store.openBlob(digest);
                        InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
                    writer.discard();
                    in.transferTo(writer.stream());
                    writer.commit();
                }
            }

            private Path file(String digest) throws ImageException {
                Path file = dir.resolve("blobs").resolve("sha256").resolve(Digests.hex(digest));
                if (!Files.isRegularFile(file)) {
                    throw new ImageException(ImageException.Failure.NOT_FOUND, dir + " lacks blob " + digest
                            + ", which its index or a manifest names: the layout is incomplete; copy it again");
                }
                return file;
            }
        };
    }

    /** The blobs of a layout tar, which {@link ArchiveScan} has already stored (verified). */
    static Blobs stored(ImageStore store, String source) {
        return new Blobs() {
            @Override
            public byte[] read(String digest) throws IOException {
                store(digest);
                return ImageFormats.readDocument(store.blob(digest), "blob " + digest + " of " + source);
            }

            @Override
            public void store(String digest) throws IOException {
                Digests.hex(digest);
                if (!store.hasBlob(digest)) {
                    throw new ImageException(ImageException.Failure.NOT_FOUND, source + " lacks blob " + digest
                            + ", which its index or a manifest names: the archive is incomplete; export it again");
                }
            }
        };
    }
}
