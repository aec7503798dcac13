package dev.crucible.image.archive;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;

/**
 * The images of a {@code docker save} archive: {@code manifest.json} lists each image's config file, names
 * ({@code RepoTags}) and layer tars. Docker names layers by ids, not digests, so each layer's digest is the one computed
 * while it was stored; an uncompressed layer must equal its config's {@code diff_ids} entry. Each image gets a
 * synthesized OCI manifest (stored as a blob; its sha256 is the image's digest) and goes through
 * {@link ImageStore#commit} like a pull.
 */
final class DockerArchive {
    private static final Pattern CONFIG_NAMED_BY_DIGEST = Pattern.compile("(?:.*/)?(?:sha256/)?([a-f0-9]{64})(?:\\.json)?");

    @JsonIgnoreProperties(ignoreUnknown = true)
    record Entry(@JsonProperty("Config") String config, @JsonProperty("RepoTags") List<String> repoTags,
            @JsonProperty("Layers") List<String> layers) {}

    /** One image ready to commit: its names, synthesized manifest and config. */
    private record Prepared(List<ImageRef> names, String digest, byte[] manifest, byte[] config) {}

    private DockerArchive() {}

    static List<Image> importAll(ArchiveScan scan, ImageStore store, ImageRef tag, String source) throws IOException {
        List<Entry> entries = entries(scan, source);
        if (tag != null && entries.size() != 1) {
            throw new ImageException(ImageException.Failure.INVALID_REFERENCE, source + " holds " + entries.size()
                    + " images and --tag names one: import it without --tag to keep the names it gives them");
        }
        List<Prepared> prepared = new ArrayList<>();
        for (Entry entry : entries) {
            prepared.add(prepare(scan, store, entry, tag, source));
        }
        List<Image> images = new ArrayList<>();
        for (Prepared p : prepared) {
            for (ImageRef name : p.names()) {
                images.add(store.commit(name, p.digest(), p.manifest(), p.config()));
            }
        }
        return images;
    }

    private static List<Entry> entries(ArchiveScan scan, String source) throws IOException {
        try {
            List<Entry> entries = ImageFormats.JSON.readValue(scan.bytes("manifest.json"), new TypeReference<>() {});
            if (entries == null || entries.isEmpty()) {
                throw new ImageException(ImageException.Failure.UNSUPPORTED, "manifest.json of " + source
                        + " lists no image");
            }
            return entries;
        } catch (JacksonException e) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, "manifest.json of " + source
                    + " is not a docker save manifest: " + e.getOriginalMessage());
        }
    }

    private static Prepared prepare(ArchiveScan scan, ImageStore store, Entry entry, ImageRef tag, String source)
            throws IOException {
        if (entry.config() == null || entry.layers() == null) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, "manifest.json of " + source
                    + " has an image without Config or Layers");
        }
        byte[] config = require(scan.bytes(entry.config()), entry.config(), source);
        Matcher named = CONFIG_NAMED_BY_DIGEST.matcher(entry.config());
        if (named.matches()) {
            Digests.verify("sha256:" + named.group(1), config, "config " + entry.config() + " of " + source);
        }
        String configDigest = Digests.of(config);
        List<String> diffIds = ImageFormats.config(config, configDigest).diffIds();
        if (!diffIds.isEmpty() && diffIds.size() != entry.layers().size()) {
            throw new ImageException(ImageException.Failure.UNSUPPORTED, "config " + entry.config() + " of " + source
                    + " lists " + diffIds.size() + " layers but manifest.json " + entry.layers().size());
        }
        List<ImageFormats.Descriptor> layers = new ArrayList<>();
        for (int i = 0; i < entry.layers().size(); i++) {
            layers.add(layer(scan, store, entry.layers().get(i), i < diffIds.size() ? diffIds.get(i) : null, source));
        }
        byte[] bytes = ImageFormats.manifestBytes(ImageFormats.OCI_MANIFEST, ImageFormats.OCI_CONFIG, config, layers);
        return new Prepared(names(entry, tag, configDigest, source), Digests.of(bytes), bytes, config);
    }

    private static ImageFormats.Descriptor layer(ArchiveScan scan, ImageStore store, String path, String diffId,
            String source) throws IOException {
        String digest = scan.digest(path);
        if (digest == null) {
            throw new ImageException(ImageException.Failure.NOT_FOUND, source + " lacks the layer " + path
                    + " its manifest.json lists: the archive is incomplete; save it again");
        }
        Path blob = store.blob(digest);
        String type = mediaType(blob);
        if (type.equals(ImageFormats.OCI_LAYER_TAR) && diffId != null && !diffId.equals(digest)) {
            throw new ImageException(ImageException.Failure.DIGEST_MISMATCH, "layer " + path + " of " + source
                    + " hashes to " + digest + " but its config says " + diffId + ": the archive is damaged; save it again");
        }
        return new ImageFormats.Descriptor(type, digest, Files.size(blob));
    }

    /** A layer's media type from its first bytes: docker save writes plain tars, other tools may compress them. */
    private static String mediaType(Path blob) throws IOException {
        byte[] magic;
        try (InputStream in = Files.newInputStream(blob)) {
            magic = in.readNBytes(4);
        }
        if (magic.length >= 2 && (magic[0] & 0xff) == 0x1f && (magic[1] & 0xff) == 0x8b) {
            return ImageFormats.OCI_LAYER_GZIP;
        }
        if (magic.length == 4 && (magic[0] & 0xff) == 0x28 && (magic[1] & 0xff) == 0xb5 && (magic[2] & 0xff) == 0x2f
                && (magic[3] & 0xff) == 0xfd) {
            return ImageFormats.OCI_LAYER_ZSTD;
        }
        return ImageFormats.OCI_LAYER_TAR;
    }

    private static List<ImageRef> names(Entry entry, ImageRef tag, String configDigest, String source)
            throws ImageException {
        if (tag != null) {
            return List.of(tag);
        }
        if (entry.repoTags() == null || entry.repoTags().isEmpty()) {
            throw new ImageException(ImageException.Failure.INVALID_REFERENCE, "image " + configDigest + " in "
                    + source + " has no name (its RepoTags is empty): give one with --tag NAME");
        }
        List<ImageRef> names = new ArrayList<>();
        for (String repoTag : entry.repoTags()) {
            names.add(ImageRef.parse(repoTag));
        }
        return names;
    }

    private static byte[] require(byte[] bytes, String name, String source) throws ImageException {
        if (bytes == null) {
            throw new ImageException(ImageException.Failure.NOT_FOUND, source + " lacks " + name
                    + ", which its manifest.json lists: the archive is incomplete; save it again");
        }
        return bytes;
    }
}
