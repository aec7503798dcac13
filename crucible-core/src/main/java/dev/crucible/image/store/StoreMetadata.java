package dev.crucible.image.store;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.module.SimpleModule;
import tools.jackson.databind.ser.std.ToStringSerializer;

/**
 * The store's metadata: {@code images/<manifest hex>.json} (one {@link Image} each) and {@code names.json} (canonical
 * name → manifest digest). Both are replaced by rename, so readers need no lock; writers hold {@code .lock}.
 */
final class StoreMetadata {
    /** Paths as plain strings (Jackson writes file URIs by default), dates as ISO-8601. */
    static final JsonMapper JSON = JsonMapper.builder()
            .addModule(new SimpleModule("crucible-image").addSerializer(Path.class, ToStringSerializer.instance))
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();
    private static final TypeReference<TreeMap<String, String>> NAMES = new TypeReference<>() {};

    private final Path images;
    private final Path names;
    private final Path lock;

    StoreMetadata(Path dir) {
        this.images = dir.resolve("images");
        this.names = dir.resolve("names.json");
        this.lock = dir.resolve(".lock");
    }

    Path imagesDir() {
        return images;
    }

    /** Work that changes names or metadata, or must see them unchanged (prune). */
    interface Locked<T> {
        T run() throws IOException;
    }

    /** Runs {@code work} holding the store's exclusive lock (against other threads and processes). */
    <T> T locked(Locked<T> work) throws IOException {
        try (Closeable held = FileLocks.exclusive(lock)) {
            return work.run();
        }
    }

    /** The names table, sorted; empty for a new store. */
    TreeMap<String, String> names() throws IOException {
        try {
            return JSON.readValue(Files.readAllBytes(names), NAMES);
        } catch (NoSuchFileException e) {
            return new TreeMap<>();
        } catch (JacksonException e) {
            throw new IOException(names + " is damaged (" + e.getOriginalMessage() + "); restore it or remove it and"
                    + " pull the images again", e);
        }
    }

    void writeNames(Map<String, String> table) throws IOException {
        StoreFiles.writeAtomically(names, JSON.writeValueAsBytes(new TreeMap<>(table)));
    }

    /** The metadata of the image with this manifest digest, if stored. */
    Optional<Image> image(String manifestDigest) throws IOException {
        Path file = images.resolve(Digests.hex(manifestDigest) + ".json");
        try {
            return Optional.of(JSON.readValue(Files.readAllBytes(file), Image.class));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (JacksonException e) {
            throw new IOException(file + " is damaged (" + e.getOriginalMessage() + "); remove it and pull the image"
                    + " again", e);
        }
    }

    void writeImage(Image image) throws IOException {
        StoreFiles.writeAtomically(images.resolve(Digests.hex(image.digest()) + ".json"), JSON.writeValueAsBytes(image));
    }
}
