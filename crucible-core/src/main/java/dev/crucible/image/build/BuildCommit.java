package dev.crucible.image.build;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The image an image build commits: the base image's config as it was (Env, Cmd, labels, every field Crucible does
 * not read) with the new layer's diff_id appended, a new {@code created} time and a history entry naming the steps;
 * a manifest of the base's kind (OCI or Docker schema 2) with the new layer last. Both go through
 * {@link ImageStore#commit}, which unpacks the new image's root from all its layers like any pulled image's.
 */
final class BuildCommit {
    private BuildCommit() {}

    /**
     * @param layer the new layer's blob digest (stored already), gzip-compressed
     * @param layerBytes the blob's size
     * @param diffId the digest of the layer's uncompressed tar
     */
    static Image commit(ImageStore store, Image base, ImageRef tag, History history, String layer, long layerBytes,
            String diffId, Instant now) throws IOException {
        return commit(store, base, tag, history, null, layer, layerBytes, diffId, now);
    }

    /** As above, with what a build's config steps set written into the config (null: nothing). */
    static Image commit(ImageStore store, Image base, ImageRef tag, History history, BuildConfig changes, String layer,
            long layerBytes, String diffId, Instant now) throws IOException {
        ImageFormats.Manifest manifest = ImageFormats.manifest(store.smallBlob(base.digest()), base.digest());
        byte[] config = config(store.smallBlob(base.id()), base.layers().size(), history, changes, diffId, now);
        List<ImageFormats.Descriptor> layers = new ArrayList<>(manifest.layers());
        boolean docker = ImageFormats.DOCKER_MANIFEST.equals(manifest.mediaType());
        layers.add(new ImageFormats.Descriptor(docker ? ImageFormats.DOCKER_LAYER_GZIP : ImageFormats.OCI_LAYER_GZIP,
                layer, layerBytes));
        byte[] bytes = ImageFormats.manifestBytes(manifest.mediaType(), manifest.config().mediaType(), config, layers);
        return store.commit(tag, Digests.of(bytes), bytes, config);
    }

    /** The history entry of the new layer: what made it, and a comment. */
    record History(String createdBy, String comment) {
        static History of(List<String> steps) {
            return new History("crucible image build: " + String.join(" && ", steps), "one layer for " + steps.size()
                    + (steps.size() == 1 ? " step" : " steps"));
        }
    }

    /**
     * The base config with {@code changes} (a Dockerfile's ENV, WORKDIR, USER, CMD… or none) written into its {@code
     * config}, {@code diffId} appended to {@code rootfs.diff_ids} and one history entry; a base without a history gets
     * an empty entry per layer first, so that entries and layers still pair up.
     */
    private static byte[] config(byte[] base, int baseLayers, History entry, BuildConfig changes, String diffId,
            Instant now) {
        ObjectNode json = (ObjectNode) ImageFormats.JSON.readTree(base);
        if (changes != null) {
            changes.writeTo(json.withObjectProperty("config"));
        }
        json.put("created", now.toString());
        ObjectNode rootfs = json.withObjectProperty("rootfs");
        rootfs.put("type", "layers");
        rootfs.withArrayProperty("diff_ids").add(diffId);
        JsonNode existing = json.get("history");
        ArrayNode history = existing instanceof ArrayNode a ? a : json.putArray("history");
        if (existing == null) {
            for (int i = 0; i < baseLayers; i++) {
                history.addObject();
            }
        }
        history.addObject()
                .put("created", now.toString())
                .put("created_by", entry.createdBy())
                .put("comment", entry.comment());
        return ImageFormats.JSON.writeValueAsBytes(json);
    }
}
