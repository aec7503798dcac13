package dev.crucible.image.store;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageRef;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a reference names in the names table: a short or canonical name, {@code name@sha256:…}, a manifest digest, or
 * a hex prefix (12 digits or more) of an id or manifest digest. A prefix that fits two images names neither.
 */
final class ImageLookup {
    private static final Pattern PREFIX = Pattern.compile("(?:sha256:)?([a-f0-9]{12,64})");

    /** The manifest digest a reference resolved to, and the names (keys of the table) that point at it. */
    record Match(String digest, List<String> names) {}

    /** Reads an image's metadata by manifest digest. */
    interface Metadata {
        Optional<Image> image(String digest) throws IOException;
    }

    private ImageLookup() {}

    /** The key a name is stored under: {@code registry/repo:tag}, or {@code registry/repo@digest} without a tag. */
    static String key(ImageRef name) {
        return name.tag() != null ? name.name() + ":" + name.tag() : name.canonical();
    }

    static Optional<Match> resolve(Map<String, String> names, String reference, Metadata metadata) throws IOException {
        if (reference == null || reference.isBlank()) {
            return Optional.empty();
        }
        String ref = reference.strip();
        if (Digests.valid(ref)) {
            return pointingAt(names, ref, null);
        }
        ImageRef parsed = parseOrNull(ref);
        if (parsed != null && parsed.digest() == null && names.containsKey(key(parsed))) {
            return Optional.of(new Match(names.get(key(parsed)), List.of(key(parsed))));
        }
        if (parsed != null && parsed.digest() != null) {
            String key = parsed.name() + "@" + parsed.digest();
            return names.containsKey(key) ? Optional.of(new Match(names.get(key), List.of(key)))
                    : pointingAt(names, parsed.digest(), parsed.name());
        }
        var prefix = PREFIX.matcher(ref);
        return prefix.matches() ? byPrefix(names, prefix.group(1), metadata) : Optional.empty();
    }

    /** The names pointing at {@code digest} (within {@code repository} when given). */
    private static Optional<Match> pointingAt(Map<String, String> names, String digest, String repository) {
        List<String> keys = new ArrayList<>();
        names.forEach((key, value) -> {
            if (value.equals(digest) && (repository == null || repositoryOf(key).equals(repository))) {
                keys.add(key);
            }
        });
        return keys.isEmpty() ? Optional.empty() : Optional.of(new Match(digest, List.copyOf(keys)));
    }

    private static Optional<Match> byPrefix(Map<String, String> names, String hex, Metadata metadata)
            throws IOException {
        Set<String> digests = new LinkedHashSet<>();
        for (String digest : new LinkedHashSet<>(names.values())) {
            Optional<Image> image = metadata.image(digest);
            if (digest.startsWith("sha256:" + hex) || image.isPresent() && image.get().id().startsWith("sha256:" + hex)) {
                digests.add(digest);
            }
        }
        return digests.size() == 1 ? pointingAt(names, digests.iterator().next(), null) : Optional.empty();
    }

    /** {@code registry/repo} of a key. */
    static String repositoryOf(String key) {
        int at = key.indexOf('@');
        String name = at >= 0 ? key.substring(0, at) : key;
        int colon = name.lastIndexOf(':');
        return colon > name.lastIndexOf('/') ? name.substring(0, colon) : name;
    }

    private static ImageRef parseOrNull(String text) {
        try {
            return ImageRef.parse(text);
        } catch (ImageException e) {
            return null;
        }
    }
}
