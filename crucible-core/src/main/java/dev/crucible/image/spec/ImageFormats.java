package dev.crucible.image.spec;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The OCI and Docker (schema 2) JSON documents an image is made of, read strictly: manifests, indexes and configs, with
 * the media types Crucible accepts. Unknown fields are ignored; a wrong type or a missing part is UNSUPPORTED.
 */
public final class ImageFormats {
    public static final String OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
    public static final String DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
    public static final String OCI_INDEX = "application/vnd.oci.image.index.v1+json";
    public static final String DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
    public static final String OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
    public static final String DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json";
    public static final String OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar";
    public static final String OCI_LAYER_GZIP = OCI_LAYER_TAR + "+gzip";
    public static final String OCI_LAYER_ZSTD = OCI_LAYER_TAR + "+zstd";
    public static final String DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip";
    public static final String DOCKER_LAYER_TAR = "application/vnd.docker.image.rootfs.diff.tar";
    private static final Set<String> LAYERS = Set.of(OCI_LAYER_TAR, OCI_LAYER_GZIP, OCI_LAYER_ZSTD, DOCKER_LAYER_GZIP,
            DOCKER_LAYER_TAR);
    private static final Set<String> CONFIGS = Set.of(OCI_CONFIG, DOCKER_CONFIG);

    public static final JsonMapper JSON = JsonMapper.builder().build();
    /** The cap on a manifest, index or config read whole into memory from a file (an archive's, a layout's, a blob). */
    public static final int MAX_DOCUMENT = 8 << 20;

    private ImageFormats() {}

    /** {@code os/architecture[/variant]}; the fields of a config, or of a descriptor in an index. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Platform(@JsonProperty("os") String os, @JsonProperty("architecture") String architecture,
            @JsonProperty("variant") String variant) {
        /** This host's platform, as images name it. */
        public static Platform host() {
            String arch = switch (System.getProperty("os.arch").toLowerCase(Locale.ROOT)) {
                case "amd64", "x86_64" -> "amd64";
                case "aarch64", "arm64" -> "arm64";
                case "arm", "aarch32" -> "arm";
                case "x86", "i386", "i686" -> "386";
                case String other -> other;
            };
            return new Platform("linux", arch, null);
        }

        /** Whether an image of this platform runs on {@code host} (an arm64 variant other than v8 does not). */
        public boolean runsOn(Platform host) {
            boolean variantFits = variant == null || variant.isEmpty() || variant.equals(host.variant)
                    || ("arm64".equals(architecture) && variant.equals("v8"));
            return host.os.equals(os) && host.architecture.equals(architecture) && variantFits;
        }

        @Override
        public String toString() {
            return os + "/" + architecture + (variant == null || variant.isEmpty() ? "" : "/" + variant);
        }
    }

    /** A pointer to a blob: its media type, digest and size. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Descriptor(@JsonProperty("mediaType") String mediaType, @JsonProperty("digest") String digest,
            @JsonProperty("size") long size, @JsonProperty("annotations") Map<String, String> annotations,
            @JsonProperty("platform") Platform platform) {
        public Descriptor(String mediaType, String digest, long size) {
            this(mediaType, digest, size, null, null);
        }

        public String annotation(String key) {
            return annotations == null ? null : annotations.get(key);
        }
    }

    /** An image manifest: the config and the layers, lowest first. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Manifest(@JsonProperty("schemaVersion") int schemaVersion,
            @JsonProperty("mediaType") String mediaType, @JsonProperty("config") Descriptor config,
            @JsonProperty("layers") List<Descriptor> layers) {}

    /** An image index (or Docker manifest list): one manifest per platform. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Index(@JsonProperty("schemaVersion") int schemaVersion, @JsonProperty("mediaType") String mediaType,
            @JsonProperty("manifests") List<Descriptor> manifests) {}

    /** The parts of an image config Crucible uses. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Config(@JsonProperty("os") String os, @JsonProperty("architecture") String architecture,
            @JsonProperty("variant") String variant, @JsonProperty("config") Run config,
            @JsonProperty("rootfs") RootFs rootfs) {
        public Platform platform() {
            return new Platform(os, architecture, variant);
        }

        public Run run() {
            return config == null ? new Run(null, null, null, null) : config;
        }

        public List<String> diffIds() {
            return rootfs == null || rootfs.diffIds() == null ? List.of() : rootfs.diffIds();
        }
    }

    /** How the image runs: {@code config.Env}, {@code WorkingDir}, {@code Entrypoint}, {@code Cmd}. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Run(@JsonProperty("Env") List<String> env, @JsonProperty("WorkingDir") String workingDir,
            @JsonProperty("Entrypoint") List<String> entrypoint, @JsonProperty("Cmd") List<String> cmd) {}

    /** The uncompressed layers' digests ({@code diff_ids}). */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record RootFs(@JsonProperty("type") String type, @JsonProperty("diff_ids") List<String> diffIds) {}

    /**
     * The bytes of a schema 2 manifest of type {@code mediaType} naming {@code config} (of type {@code configType}) and
     * {@code layers}: the manifest an import synthesizes and an image build writes.
     */
    public static byte[] manifestBytes(String mediaType, String configType, byte[] config, List<Descriptor> layers) {
        return JSON.writeValueAsBytes(new Manifest(2, mediaType,
                new Descriptor(configType, Digests.of(config), config.length), layers));
    }

    public static boolean isIndex(String mediaType) {
        return OCI_INDEX.equals(mediaType) || DOCKER_LIST.equals(mediaType);
    }

    /** Reads and checks an image manifest: schema 2, a container config, layers of a kind Crucible unpacks. */
    public static Manifest manifest(byte[] bytes, String digest) throws ImageException {
        Manifest m = read(bytes, Manifest.class, "manifest " + digest);
        if (isIndex(m.mediaType())) {
            throw unsupported("manifest " + digest + " is an index of platform images; give the digest of one of them");
        }
        if (m.schemaVersion() != 2 || m.mediaType() != null && !m.mediaType().equals(OCI_MANIFEST)
                && !m.mediaType().equals(DOCKER_MANIFEST)) {
            throw unsupported("manifest " + digest + " is " + (m.mediaType() == null ? "schema " + m.schemaVersion()
                    : m.mediaType()) + ": Crucible reads OCI image manifests and Docker schema 2 manifests");
        }
        if (m.config() == null || !CONFIGS.contains(m.config().mediaType())) {
            throw unsupported("manifest " + digest + " is not a container image (its config is "
                    + (m.config() == null ? "missing" : m.config().mediaType()) + ")");
        }
        Digests.hex(m.config().digest());
        for (Descriptor layer : m.layers() == null ? List.<Descriptor>of() : m.layers()) {
            checkLayer(layer, digest);
        }
        return m.layers() == null ? new Manifest(2, m.mediaType(), m.config(), List.of()) : m;
    }

    private static void checkLayer(Descriptor layer, String manifest) throws ImageException {
        if (layer == null) {
            throw unsupported("manifest " + manifest + " has a null layer");
        }
        String type = layer.mediaType();
        if (type != null && (type.contains("nondistributable") || type.contains("foreign"))) {
            throw unsupported("layer " + layer.digest() + " is a non-distributable (foreign) layer (" + type
                    + "): Crucible does not fetch blobs from outside the image; use an image without one");
        }
        if (!LAYERS.contains(type)) {
            throw unsupported("layer " + layer.digest() + " has media type " + type + ": Crucible unpacks tar layers,"
                    + " plain or compressed with gzip or zstd");
        }
        Digests.hex(layer.digest());
    }

    /** Reads an image config: a Linux image with an architecture. */
    public static Config config(byte[] bytes, String digest) throws ImageException {
        Config c = read(bytes, Config.class, "config " + digest);
        if (!"linux".equals(c.os()) || c.architecture() == null || c.architecture().isBlank()) {
            throw unsupported("image config " + digest + " is for " + c.os() + "/" + c.architecture()
                    + ": Crucible runs Linux images");
        }
        return c;
    }

    /** Reads an image index (or Docker manifest list). */
    public static Index index(byte[] bytes, String what) throws ImageException {
        Index index = read(bytes, Index.class, what);
        if (index.schemaVersion() != 2 || index.manifests() == null) {
            throw unsupported(what + " is not an OCI image index (schemaVersion 2 with manifests)");
        }
        return index;
    }

    /** The bytes of a file that holds one document; TOO_LARGE past {@link #MAX_DOCUMENT}, {@code what} names it. */
    public static byte[] readDocument(Path file, String what) throws IOException {
        if (Files.size(file) > MAX_DOCUMENT) {
            throw new ImageException(ImageException.Failure.TOO_LARGE, what + " is larger than "
                    + (MAX_DOCUMENT >> 20) + " MiB: not a manifest or config Crucible reads");
        }
        return Files.readAllBytes(file);
    }

    private static <T> T read(byte[] bytes, Class<T> type, String what) throws ImageException {
        try {
            T value = JSON.readValue(bytes, type);
            if (value == null) {
                throw unsupported(what + " is empty");
            }
            return value;
        } catch (JacksonException e) {
            throw unsupported(what + " is not valid JSON of its kind: " + e.getOriginalMessage());
        }
    }

    private static ImageException unsupported(String message) {
        return new ImageException(ImageException.Failure.UNSUPPORTED, message);
    }
}
