package dev.crucible.image.registry;

import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Pushes an image of an {@link ImageStore} to an OCI Distribution registry, as {@code docker push} does: each blob
 * (layers, then the config) the repository does not have yet ({@code HEAD}) is uploaded whole ({@code POST
 * blobs/uploads/}, then {@code PUT ?digest=}), then the manifest is put under the tag. The bytes sent are the store's
 * own, verified when they were stored, so the registry gets the image's digest unchanged. https is required except for
 * loopback registries and those listed as insecure, as for a pull; a login, when the registry asks for one, asks for
 * push. Immutable and thread-safe.
 */
public final class ImagePusher {
    /**
     * What a push did.
     *
     * @param digest the manifest's digest, as the registry now serves it under the tag
     * @param blobsSent blobs uploaded; {@code blobsPresent} those the repository had already
     */
    public record Pushed(ImageRef destination, String digest, int blobsSent, int blobsPresent, long bytesSent) {}

    /** Receives progress; called from the pushing thread. */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = (digest, size, sent) -> { };

        /** A blob was uploaded ({@code sent}) or found in the repository already. */
        void blobDone(String digest, long size, boolean sent);
    }

    private final ImagePuller.Options options;

    public ImagePusher(ImagePuller.Options options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    /**
     * Pushes {@code image} of {@code store} to {@code destination} ({@code registry/repository[:tag]}; no tag is
     * {@code latest}).
     *
     * @throws ImageException INVALID_REFERENCE for a destination with a digest (a push names a tag: the digest is the
     *     image's), UNAUTHORIZED, UNREACHABLE, NOT_FOUND (a blob of the image left the store)
     */
    public Pushed push(Image image, ImageStore store, ImageRef destination, Progress progress) throws IOException {
        if (destination.digest() != null) {
            throw new ImageException(ImageException.Failure.INVALID_REFERENCE, "push to a tag, not a digest ("
                    + destination.canonical() + "): the image keeps its own digest, " + image.digest());
        }
        String tag = destination.tag() == null ? "latest" : destination.tag();
        byte[] manifestBytes = store.smallBlob(image.digest());
        ImageFormats.Manifest manifest = ImageFormats.manifest(manifestBytes, image.digest());
        List<ImageFormats.Descriptor> blobs = new ArrayList<>(manifest.layers());
        blobs.add(manifest.config());
        int sent = 0;
        long bytes = 0;
        try (RegistryClient client = new RegistryClient(destination, options, true)) {
            for (ImageFormats.Descriptor blob : blobs) {
                if (!store.hasBlob(blob.digest())) {
                    throw new ImageException(ImageException.Failure.NOT_FOUND, "blob " + blob.digest() + " of "
                            + image.name() + " is not in the store: pull the image again");
                }
                boolean upload = !has(client, blob.digest());
                if (upload) {
                    upload(client, store, blob.digest());
                    sent++;
                    bytes += blob.size();
                }
                progress.blobDone(blob.digest(), blob.size(), upload);
            }
            String mediaType = manifest.mediaType() != null ? manifest.mediaType() : ImageFormats.OCI_MANIFEST;
            close(client.write("PUT", client.resolve("manifests/" + tag), Map.of("Content-Type", mediaType),
                    HttpRequest.BodyPublishers.ofByteArray(manifestBytes), Set.of(200, 201, 202),
                    "repository " + destination.name() + " not found"));
        }
        return new Pushed(destination, image.digest(), sent, blobs.size() - sent, bytes);
    }

    private static boolean has(RegistryClient client, String digest) throws IOException {
        HttpResponse<InputStream> head = client.write("HEAD", client.resolve("blobs/" + digest), Map.of(),
                HttpRequest.BodyPublishers.noBody(), Set.of(200, 404), "");
        close(head);
        return head.statusCode() == 200;
    }

    /** A monolithic upload: a session opened, then the whole blob put with its digest. */
    private static void upload(RegistryClient client, ImageStore store, String digest) throws IOException {
        HttpResponse<InputStream> started = client.write("POST", client.resolve("blobs/uploads/"), Map.of(),
                HttpRequest.BodyPublishers.noBody(), Set.of(202), "repository not found");
        close(started);
        String location = started.headers().firstValue("Location").orElseThrow(() -> new ImageException(
                ImageException.Failure.UNREACHABLE, "registry answered an upload without a Location"));
        URI session = started.uri().resolve(location.strip());
        URI target = URI.create(session + (session.getRawQuery() == null ? "?" : "&") + "digest="
                + URLEncoder.encode(digest, StandardCharsets.UTF_8));
        close(client.write("PUT", target, Map.of("Content-Type", "application/octet-stream"),
                HttpRequest.BodyPublishers.ofFile(store.blob(digest)), Set.of(201, 204), "upload session not found"));
    }

    private static void close(HttpResponse<InputStream> response) throws IOException {
        response.body().close();
    }
}
