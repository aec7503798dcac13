package dev.crucible.image.layer;

import static java.nio.file.LinkOption.NOFOLLOW_LINKS;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * What the unpacker tests watch: a root to unpack into and, beside it, a tree of sentinel files no layer may change,
 * with its state before the layer; and the small file-attribute readers their assertions use.
 */
public final class Sentinels {
    private Sentinels() {}

    /**
     * @param outsideAbsolute the sentinel tree's absolute host path, as a name inside a layer
     * @param before the tree's {@link #snapshot} before anything is unpacked
     */
    public record Planted(Path root, Path outside, String outsideAbsolute, Map<String, String> before) {}

    /** {@code base/root} (not made) and {@code base/outside} with {@code secret} and {@code dir/inner}. */
    public static Planted plant(Path base, String attributes) throws IOException {
        Path outside = base.resolve("outside");
        Files.createDirectories(outside.resolve("dir"));
        Files.writeString(outside.resolve("secret"), "sentinel");
        Files.writeString(outside.resolve("dir/inner"), "inner");
        return new Planted(base.resolve("root"), outside, outside.toAbsolutePath().toString(),
                snapshot(outside, attributes));
    }

    /** Every path under {@code dir} with the {@code unix:} {@code attributes} named and its content. */
    public static Map<String, String> snapshot(Path dir, String attributes) throws IOException {
        Map<String, String> state = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.toList()) {
                Map<String, Object> a = Files.readAttributes(p, attributes, NOFOLLOW_LINKS);
                String content = Files.isRegularFile(p, NOFOLLOW_LINKS) ? Files.readString(p) : "";
                state.put(dir.relativize(p).toString(), new TreeMap<>(a) + " " + content);
            }
        }
        return state;
    }

    public static int mode(Path p) throws IOException {
        return (int) Files.getAttribute(p, "unix:mode", NOFOLLOW_LINKS) & 07777;
    }

    public static long inode(Path p) throws IOException {
        return (long) Files.getAttribute(p, "unix:ino", NOFOLLOW_LINKS);
    }

    public static List<String> names(Path dir) throws IOException {
        try (Stream<Path> list = Files.list(dir)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
