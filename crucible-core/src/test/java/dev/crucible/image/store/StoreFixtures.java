package dev.crucible.image.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Images and archives for the store and import tests: layer tars built here, OCI layouts by umoci and skopeo. */
public final class StoreFixtures {
    private StoreFixtures() {}

    /** A layer tar built in memory: entries in the order added, owned by root, at a fixed time. */
    public static String sha256(byte[] bytes) {
        return Digests.of(bytes);
    }

    /** Stores a blob through a writer, as a pull does; returns its digest. */
    public static String putBlob(ImageStore store, byte[] bytes) throws IOException {
        String digest = sha256(bytes);
        try (BlobWriter writer = store.openBlob(digest)) {
            writer.stream().write(bytes);
            writer.commit();
        }
        return digest;
    }

    /** A config for plain-tar layers; {@code salt} makes two configs (ids) differ. */
    public static byte[] config(String salt, List<byte[]> layers) {
        List<String> diffIds = layers.stream().map(StoreFixtures::sha256).toList();
        String json = "{\"architecture\":\"" + ImageFormats.Platform.host().architecture() + "\",\"os\":\"linux\","
                + "\"config\":{\"Env\":[\"PATH=/usr/bin:/bin\",\"SALT=" + salt + "\"],\"WorkingDir\":\"/work\","
                + "\"Entrypoint\":[\"/bin/sh\",\"-c\"],\"Cmd\":[\"echo hi\"]},"
                + "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":" + ImageFormats.JSON.writeValueAsString(diffIds) + "}}";
        return json.getBytes(StandardCharsets.UTF_8);
    }

    /** An OCI manifest for a config and layers of the given media type. */
    public static byte[] manifest(byte[] config, List<byte[]> layers, String layerType) {
        List<ImageFormats.Descriptor> descriptors = new ArrayList<>();
        for (byte[] layer : layers) {
            descriptors.add(new ImageFormats.Descriptor(layerType, sha256(layer), layer.length));
        }
        return ImageFormats.JSON.writeValueAsBytes(new ImageFormats.Manifest(2, ImageFormats.OCI_MANIFEST,
                new ImageFormats.Descriptor(ImageFormats.OCI_CONFIG, sha256(config), config.length), descriptors));
    }

    /** Stores the layers and commits an image of plain-tar layers under {@code name}. */
    public static Image commit(ImageStore store, String name, String salt, byte[]... layers) throws IOException {
        List<byte[]> list = List.of(layers);
        for (byte[] layer : list) {
            putBlob(store, layer);
        }
        byte[] config = config(salt, list);
        byte[] manifest = manifest(config, list, ImageFormats.OCI_LAYER_TAR);
        return store.commit(ImageRef.parse(name), sha256(manifest), manifest, config);
    }

    /** Files directly in {@code dir} (none if it is missing). */
    public static List<String> entries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** No image, root, staging dir or metadata is visible. */
    public static void assertNothingVisible(ImageStore store) throws IOException {
        assertThat(store.list()).isEmpty();
        assertThat(entries(store.dir().resolve("roots"))).allMatch(n -> n.endsWith(".lock"));
        assertThat(entries(store.dir().resolve("staging"))).isEmpty();
        assertThat(entries(store.dir().resolve("images"))).isEmpty();
    }

    public static String mode(Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    /** Runs a tool in {@code dir}; fails the test with its output unless it exits 0. */
    public static void run(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("%s finished", List.of(command)).isTrue();
        assertThat(p.exitValue()).as("%s: %s", List.of(command), output).isZero();
    }

    /** An OCI layout at {@code dir/oci} with image {@code tag} made of {@code layers} (umoci gzips them). */
    public static Path umociLayout(Path dir, String tag, Path... layers) throws IOException, InterruptedException {
        Capability.UMOCI.require();
        Path layout = dir.resolve("oci");
        run(dir, "umoci", "init", "--layout", layout.toString());
        run(dir, "umoci", "new", "--image", layout + ":" + tag);
        for (Path layer : layers) {
            run(dir, "umoci", "raw", "add-layer", "--image", layout + ":" + tag, layer.toString());
        }
        return layout;
    }

    /** Copies an image with skopeo, e.g. to {@code docker-archive:FILE:NAME:TAG} or {@code oci-archive:FILE:TAG}. */
    public static void skopeo(Path dir, String from, String to) throws IOException, InterruptedException {
        Capability.SKOPEO.require();
        run(dir, "skopeo", "copy", "--quiet", from, to);
    }

    /** A root's contents: relative path → type, mode, and content hash or link target. */
    public static Map<String, String> tree(Path root) throws IOException {
        Map<String, String> tree = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.toList()) {
                String kind;
                if (Files.isSymbolicLink(p)) {
                    kind = "link " + Files.readSymbolicLink(p);
                } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    kind = "dir " + mode(p);
                } else {
                    kind = "file " + mode(p) + " " + sha256(Files.readAllBytes(p));
                }
                tree.put(root.relativize(p).toString(), kind);
            }
        }
        return tree;
    }
}
