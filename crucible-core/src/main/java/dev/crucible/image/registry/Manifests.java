package dev.crucible.image.registry;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * Fetches the image manifest a reference names from a registry: asks for the four media types Crucible reads, verifies
 * each manifest's bytes against the digest that names it (the reference's, the index entry's, or a tag's
 * {@code Docker-Content-Digest}), and from an index or manifest list follows the entry for the host's platform.
 */
final class Manifests {
    /** The cap on one manifest or index: what registries are asked to accept at least (containerd's limit too). */
    static final int MAX_BYTES = 4 << 20;
    private static final List<String> TYPES = List.of(ImageFormats.OCI_INDEX, ImageFormats.OCI_MANIFEST,
            ImageFormats.DOCKER_LIST, ImageFormats.DOCKER_MANIFEST);
    static final String ACCEPT = String.join(", ", TYPES);
    private static final String SCHEMA1 = "application/vnd.docker.distribution.manifest.v1";
    private static final int MAX_DEPTH = 2;

    /** The image manifest: its digest (the image's digest), its bytes as received, and its parsed form. */
    record Resolved(String digest, byte[] bytes, ImageFormats.Manifest manifest) {}

    private Manifests() {}

    /**
     * The manifest of {@code ref} for {@code host}.
     *
     * @throws ImageException NOT_FOUND, DIGEST_MISMATCH, UNSUPPORTED (schema 1, unknown media types, no manifest for
     *     the host's platform), TOO_LARGE (a manifest over {@link #MAX_BYTES}), or the client's failures
     */
    static Resolved resolve(RegistryClient client, ImageRef ref, ImageFormats.Platform host) throws IOException {
        String reference = ref.reference();
        String expected = ref.digest();
        for (int depth = 0; depth <= MAX_DEPTH; depth++) {
            Fetched fetched = fetch(client, ref, reference, expected);
            if (!ImageFormats.isIndex(fetched.mediaType())) {
                return new Resolved(fetched.digest(), fetched.bytes(),
                        ImageFormats.manifest(fetched.bytes(), fetched.digest()));
            }
            ImageFormats.Descriptor chosen = choose(ImageFormats.index(fetched.bytes(), "index " + fetched.digest()),
                    host, ref);
            reference = chosen.digest();
            expected = chosen.digest();
        }
        throw new ImageException(ImageException.Failure.UNSUPPORTED, ref + " nests indexes more than " + MAX_DEPTH
                + " deep: Crucible follows an index to a platform's manifest, and one index within another");
    }

    /** The entry of {@code index} for {@code host} (an exact variant first); UNSUPPORTED listing what there is. */
    static ImageFormats.Descriptor choose(ImageFormats.Index index, ImageFormats.Platform host, ImageRef ref)
            throws ImageException {
        List<ImageFormats.Descriptor> fits = index.manifests().stream()
                .filter(d -> d != null && d.platform() != null && d.platform().os() != null
                        && d.platform().architecture() != null && d.platform().runsOn(host))
                .toList();
        Optional<ImageFormats.Descriptor> exact = fits.stream()
                .filter(d -> Objects.equals(d.platform().variant(), host.variant())).findFirst();
        if (!fits.isEmpty()) {
            return exact.orElse(fits.getFirst());
        }
        List<String> platforms = index.manifests().stream()
                .filter(d -> d != null && d.platform() != null && d.platform().os() != null
                        && !"unknown".equals(d.platform().os()))
                .map(d -> d.platform().toString()).distinct().toList();
        throw new ImageException(ImageException.Failure.UNSUPPORTED, ref + " has no image for " + host
                + " (it has " + (platforms.isEmpty() ? "no platform images" : String.join(", ", platforms))
                + "): pull one built for this machine");
    }

    /** One manifest's bytes, digest and media type. */
    private record Fetched(String digest, byte[] bytes, String mediaType) {}

    private static Fetched fetch(RegistryClient client, ImageRef ref, String reference, String expected)
            throws IOException {
        byte[] bytes;
        String header;
        String contentType;
        try (RegistryClient.Response response = client.get("manifests/" + reference, Map.of("Accept", ACCEPT),
                "no such image: " + ref)) {
            bytes = RegistryClient.readAtMost(response.body(), MAX_BYTES);
            header = response.headers().firstValue("Docker-Content-Digest").orElse(null);
            contentType = response.headers().firstValue("Content-Type").orElse("");
        }
        String what = reference.equals(ref.reference()) ? "the manifest of " + ref
                : "the manifest " + reference + " (from the index of " + ref + ")";
        if (bytes.length > MAX_BYTES) {
            throw new ImageException(ImageException.Failure.TOO_LARGE, what + " is over " + (MAX_BYTES >> 20)
                    + " MiB: Crucible refuses it");
        }
        String actual = Digests.of(bytes);
        String claimed = expected != null ? expected : Digests.valid(header) ? header : null;
        if (claimed != null && !claimed.equals(actual)) {
            throw new ImageException(ImageException.Failure.DIGEST_MISMATCH, what + " should hash to " + claimed
                    + " but arrived as " + actual + ": the registry (or something on the way) sent other bytes; pull"
                    + " again, or by a digest you trust");
        }
        return new Fetched(actual, bytes, mediaType(bytes, contentType, ref));
    }

    /** The manifest's own {@code mediaType}, else its Content-Type, else what its shape says. */
    private static String mediaType(byte[] bytes, String contentType, ImageRef ref) throws ImageException {
        String type = contentType.replaceFirst(";.*", "").strip();
        JsonNode json;
        try {
            json = ImageFormats.JSON.readTree(bytes);
        } catch (JacksonException e) {
            json = null;
        }
        if (json == null || !json.isObject()) {
            throw unsupported(ref, "is not JSON (Content-Type " + type + ")");
        }
        if (json.path("schemaVersion").asInt(0) == 1 || type.startsWith(SCHEMA1)) {
            throw unsupported(ref, "is a Docker schema 1 manifest, which Crucible does not read: push the image again"
                    + " with a current Docker, buildah or skopeo (schema 2 or OCI)");
        }
        String own = json.path("mediaType").asString("");
        if (own.isEmpty()) {
            own = TYPES.contains(type) ? type
                    : json.has("manifests") ? ImageFormats.OCI_INDEX
                    : json.has("config") ? ImageFormats.OCI_MANIFEST : type;
        }
        if (!TYPES.contains(own)) {
            throw unsupported(ref, "has media type " + (own.isEmpty() ? "(none)" : own) + ": Crucible reads OCI and"
                    + " Docker schema 2 image manifests and indexes");
        }
        return own;
    }

    private static ImageException unsupported(ImageRef ref, String what) {
        return new ImageException(ImageException.Failure.UNSUPPORTED, "the manifest of " + ref + " " + what);
    }
}
