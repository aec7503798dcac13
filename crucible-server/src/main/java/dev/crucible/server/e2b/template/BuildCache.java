package dev.crucible.server.e2b.template;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Whole builds cached per token: a build of the same base image (by digest), the same steps with the same uploaded
 * files (their hashes) and the same start command as one that succeeded is that build's image, and no step runs. A
 * build that asks {@code force} (the SDK's {@code skipCache()}), or a step that does, is never served from here. The
 * key includes the owner, so one token's builds never answer (or time) another's. Kept in memory. Thread-safe.
 */
final class BuildCache {
    private final ImageStore store;
    private final JsonMapper json;
    private final Map<String, String> images = new ConcurrentHashMap<>();

    BuildCache(ImageStore store, JsonMapper json) {
        this.store = store;
        this.json = json;
    }

    /** The key of a build, or null when it is not to be cached (forced, or a base image not in the store). */
    String key(String owner, String from, JsonNode body) throws IOException {
        if (body.path("force").asBoolean(false)) {
            return null;
        }
        for (JsonNode step : body.path("steps")) {
            if (step.path("force").asBoolean(false)) {
                return null;
            }
        }
        Optional<Image> base = store.find(from);
        if (base.isEmpty()) {
            return null;
        }
        MessageDigest hash = Digests.sha256();
        for (String part : new String[] {owner, base.get().digest(), json.writeValueAsString(body.path("steps")),
            body.path("startCmd").asString(""), body.path("readyCmd").asString("")}) {
            hash.update(part.getBytes(StandardCharsets.UTF_8));
            hash.update((byte) 0);
        }
        return Digests.of(hash);
    }

    /** The image an identical build made, while the store still has it; else null. */
    String image(String key) throws IOException {
        String image = images.get(key);
        if (image != null && store.find(image).isEmpty()) {
            images.remove(key, image);
            return null;
        }
        return image;
    }

    void put(String key, String image) {
        if (key != null) {
            images.put(key, image);
        }
    }
}
