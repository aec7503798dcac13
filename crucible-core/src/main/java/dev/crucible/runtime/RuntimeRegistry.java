package dev.crucible.runtime;

import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.image.Images;
import dev.crucible.image.spec.Image;
import dev.crucible.sandbox.Isolation;
import dev.crucible.util.UserCache;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The runtimes Crucible knows, from the built-in {@code runtimes.toml} and an optional user file that adds runtimes
 * or replaces one by its {@code language}. Immutable and thread-safe once loaded.
 *
 * <p>The files are read by {@link RuntimesFile}; each definition is resolved once by {@link RuntimeResolver} (its
 * executables found where the sandbox will see them; a runtime whose tools are missing is kept, marked unavailable
 * with the reason), side by side on virtual threads.
 */
public final class RuntimeRegistry {
    private final Map<String, LanguageRuntime> byLanguage;
    private final List<LanguageRuntime> ordered;
    private final Map<String, RuntimeDefinition> definitions;
    private final Images images;
    /** Runtimes resolved in an image, by language and image digest: an image's content never changes. */
    private final Map<String, LanguageRuntime> inImages = new ConcurrentHashMap<>();

    private RuntimeRegistry(Map<String, LanguageRuntime> byLanguage, Map<String, RuntimeDefinition> definitions,
            Images images) {
        this.byLanguage = Map.copyOf(byLanguage);
        this.ordered = List.copyOf(byLanguage.values());
        this.definitions = Map.copyOf(definitions);
        this.images = images;
    }

    /** The built-in runtimes only. */
    public static RuntimeRegistry builtIn() {
        return load(null);
    }

    /**
     * The built-in runtimes with those of {@code userFile} added or replacing them.
     *
     * @param userFile a runtimes TOML file, or null
     * @throws IllegalArgumentException with the file name and the reason when the file cannot be read or parsed
     */
    public static RuntimeRegistry load(Path userFile) {
        return load(userFile, Images.none());
    }

    /**
     * The built-in runtimes with those of {@code userFile}; a runtime with {@code image = "REF"} runs in that image
     * of {@code images} (unavailable, with the pull command as the reason, while it is not in the store).
     *
     * @throws IllegalArgumentException with the file name and the reason when the file cannot be read or parsed
     */
    public static RuntimeRegistry load(Path userFile, Images images) {
        return load(userFile, images, null);
    }

    /**
     * As {@link #load(Path, Images)}; a runtime whose TOML names no {@code isolation} runs behind {@code tier} (null:
     * {@link dev.crucible.sandbox.Isolation#NAMESPACES}).
     */
    public static RuntimeRegistry load(Path userFile, Images images, Isolation tier) {
        Map<String, RuntimeDefinition> definitions = new LinkedHashMap<>(RuntimesFile.definitions(userFile));
        definitions.replaceAll((language, d) -> d.withDefaultIsolation(tier));
        Map<String, LanguageRuntime> runtimes = new LinkedHashMap<>();
        List<Thread> probes = new ArrayList<>();
        Map<String, LanguageRuntime> resolved = Collections.synchronizedMap(new LinkedHashMap<>());
        VersionCache versions = new VersionCache(UserCache.standard());
        for (RuntimeDefinition d : definitions.values()) {
            probes.add(Thread.ofVirtual().start(() -> resolved.put(d.language(),
                    RuntimeResolver.resolve(d, versions, images))));
        }
        for (Thread t : probes) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while probing runtimes", e);
            }
        }
        for (String language : definitions.keySet()) {
            runtimes.put(language, resolved.get(language));
        }
        versions.save();
        return new RuntimeRegistry(runtimes, definitions, images);
    }

    /**
     * The egress a runtime's requests may ask for besides the server's list: its {@code egress_allow} in the runtimes
     * TOML, written by the operator ({@link EgressPolicy#none()} when it has none).
     */
    public EgressPolicy egressAllow(LanguageRuntime runtime) {
        return definitions.values().stream().filter(d -> d.language().equalsIgnoreCase(runtime.language()))
                .findFirst().map(RuntimeDefinition::egress).orElse(EgressPolicy.none());
    }

    /** Every runtime, in file order; a runtime in an image as the store has it now. */
    public List<LanguageRuntime> list() {
        return ordered.stream().map(this::current).toList();
    }

    /** The images this registry's runtimes run in. */
    public Images images() {
        return images;
    }

    /**
     * {@code runtime} as it is now: a runtime whose TOML names an image is looked up in the store again (an image
     * pulled after start-up makes it available); others are returned as they are.
     */
    public LanguageRuntime current(LanguageRuntime runtime) {
        if (runtime.image() == null || !byLanguage.containsKey(runtime.language())) {
            return runtime;
        }
        RuntimeDefinition d = definitionOf(runtime);
        if (d == null || d.image() == null) {
            return runtime;
        }
        return images.find(d.image()).map(image -> inImage(runtime, image))
                .orElse(byLanguage.get(runtime.language()));
    }

    /**
     * {@code runtime}'s language running in {@code image}: its commands looked up inside the image (unavailable,
     * with the reason, when the image lacks them). Kept per language and image digest.
     */
    public LanguageRuntime inImage(LanguageRuntime runtime, Image image) {
        RuntimeDefinition d = definitionOf(runtime);
        if (d == null) {
            throw new IllegalArgumentException("not a runtime of this registry: " + runtime.language());
        }
        return inImages.computeIfAbsent(runtime.language() + "@" + image.digest(), k -> {
            String reference = d.image() != null && images.find(d.image()).map(Image::digest).orElse("")
                    .equals(image.digest()) ? d.image() : image.name();
            return RuntimeResolver.inImage(d, reference, image);
        });
    }

    private RuntimeDefinition definitionOf(LanguageRuntime runtime) {
        return definitions.values().stream().filter(d -> d.language().equalsIgnoreCase(runtime.language()))
                .findFirst().orElse(null);
    }

    /** The runtime named {@code name} (language or alias, any case), if any. */
    public Optional<LanguageRuntime> find(String name) {
        if (name == null) {
            return Optional.empty();
        }
        String key = name.toLowerCase(Locale.ROOT).strip();
        LanguageRuntime exact = byLanguage.get(key);
        if (exact != null) {
            return Optional.of(current(exact));
        }
        return ordered.stream().filter(r -> r.aliases().contains(key)).findFirst().map(this::current);
    }

    /** The runtime for a file name's extension, if any. */
    public Optional<LanguageRuntime> forFileName(String fileName) {
        int dot = fileName.lastIndexOf('.');
        if (dot < 0) {
            return Optional.empty();
        }
        String ext = fileName.substring(dot + 1).toLowerCase(Locale.ROOT);
        return ordered.stream().filter(r -> r.extensions().contains(ext)).findFirst().map(this::current);
    }
}
