package dev.crucible.image.archive;

import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code crucible image import FILE [--tag NAME]}: images from a file, for hosts without a registry. Reads
 * <ul>
 *   <li>a {@code docker save} archive (a tar with {@code manifest.json}: {@code Config}, {@code RepoTags}, {@code Layers};
 *       layers at {@code <id>/layer.tar}, {@code <digest>.tar} or {@code blobs/sha256/…});</li>
 *   <li>an OCI image layout ({@code oci-layout}, {@code index.json}, {@code blobs/sha256/…}) as a directory or a tar
 *       (what {@code skopeo copy … oci-archive:FILE} writes); Docker 25+ archives carry both and are read as OCI.</li>
 * </ul>
 * A tar may be gzip-compressed. Names: {@code --tag} when given (the archive must then hold one image), else the
 * archive's ({@code RepoTags}; in a layout the {@code io.containerd.image.name} annotation, or
 * {@code org.opencontainers.image.ref.name} when it is a full reference; a bare tag such as {@code 3.12} needs
 * {@code --tag}). Every blob the archive names by digest is verified; each image is committed through
 * {@link ImageStore#commit}, under the same rules as a pull. Blobs stored before a refusal stay until {@code prune}.
 * Thread-safe as the store is.
 */
public final class ImageImporter {
    private final ImageStore store;

    public ImageImporter(ImageStore store) {
        this.store = store;
    }

    /**
     * Imports every image of {@code source} (a file or a layout directory), named {@code tag} when not null; returns
     * them, one per name.
     *
     * @throws ImageException UNSUPPORTED when {@code source} is not an archive of a kind Crucible reads, NOT_FOUND when
     *     it does not exist or lacks a blob, INVALID_REFERENCE when a name is missing or malformed, and the failures
     *     of {@link ImageStore#commit}
     */
    public List<Image> importFrom(Path source, String tag) throws IOException {
        ImageRef name = tag == null ? null : ImageRef.parse(tag);
        if (Files.isDirectory(source)) {
            Path layout = source.resolve("oci-layout");
            Path index = source.resolve("index.json");
            if (!Files.isRegularFile(layout) || !Files.isRegularFile(index)) {
                throw notAnArchive(source);
            }
            return OciLayoutImport.importAll(ImageFormats.readDocument(layout, layout.toString()),
                    ImageFormats.readDocument(index, index.toString()), OciLayoutImport.directory(source, store), store,
                    name, source.toString());
        }
        if (!Files.isRegularFile(source)) {
            throw new ImageException(ImageException.Failure.NOT_FOUND, "no file " + source
                    + ": give a docker save archive, an OCI archive or an OCI layout directory");
        }
        ArchiveScan scan = ArchiveScan.read(source, store);
        if (scan.has("oci-layout") && scan.has("index.json")) {
            return OciLayoutImport.importAll(scan.bytes("oci-layout"), scan.bytes("index.json"),
                    OciLayoutImport.stored(store, source.toString()), store, name, source.toString());
        }
        if (scan.has("manifest.json")) {
            return DockerArchive.importAll(scan, store, name, source.toString());
        }
        throw notAnArchive(source);
    }

    static ImageException notAnArchive(Path source) {
        return new ImageException(ImageException.Failure.UNSUPPORTED, source + " is not an image archive Crucible reads:"
                + " give a `docker save` archive (a tar with manifest.json) or an OCI image layout (a directory or tar"
                + " with oci-layout and index.json, e.g. from `skopeo copy … oci-archive:FILE`), gzip-compressed or not");
    }
}
