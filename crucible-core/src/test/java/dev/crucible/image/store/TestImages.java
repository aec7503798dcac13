package dev.crucible.image.store;

import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Real images for tests: a Debian bookworm root built by {@code mmdebstrap} (minbase, Python 3 and
 * {@code python3-tabulate}, a module the host does not have, so a program that imports it proves it ran in the
 * image), committed to a store as a one-layer OCI image. The root is built once per machine and kept under the temp
 * directory.
 */
public final class TestImages {
    /** The name the Debian image is committed under. */
    public static final String DEBIAN_PYTHON = "crucible.test/debian-python:tabulate";
    /** A variable only the image's config sets. */
    public static final String IMAGE_ENV = "CRUCIBLE_TEST_IMAGE=debian-python";

    private static final Path CACHE = Path.of(System.getProperty("java.io.tmpdir"), "crucible-test-images");
    private static final String MMDEBSTRAP = "/usr/bin/mmdebstrap";

    private TestImages() {}

    /** The Debian Python image in {@code store}, committed on first use (the build takes about 20 s once a machine). */
    public static synchronized Image debianPython(ImageStore store) throws IOException, InterruptedException {
        var existing = store.find(DEBIAN_PYTHON);
        if (existing.isPresent()) {
            return existing.get();
        }
        Path layer = debianRoot();
        return commitOneLayer(store, ImageRef.parse(DEBIAN_PYTHON), layer, List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", IMAGE_ENV));
    }

    /** A tar of a Debian minbase root with Python 3 and tabulate, built once by mmdebstrap. */
    public static Path debianRoot() throws IOException, InterruptedException {
        Path tar = CACHE.resolve("debian-bookworm-python-tabulate-1.tar");
        if (Files.isRegularFile(tar)) {
            return tar;
        }
        Capability.MMDEBSTRAP.require(Files.isExecutable(Path.of(MMDEBSTRAP)) ? null
                : "mmdebstrap is not installed (apt-get install mmdebstrap; ./run-tests installs it): no Debian image");
        Files.createDirectories(CACHE);
        Path partial = CACHE.resolve("building-" + ProcessHandle.current().pid() + ".tar");
        Files.deleteIfExists(partial);
        Path log = CACHE.resolve("mmdebstrap.log");
        Process p = new ProcessBuilder(MMDEBSTRAP, "--variant=minbase", "--mode=root", "--format=tar",
                "--include=python3-minimal,python3-tabulate",
                "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
                "--dpkgopt=path-exclude=/usr/share/locale/*", "bookworm", partial.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            Files.deleteIfExists(partial);
            throw new IOException("mmdebstrap failed; see " + log + ":\n" + Files.readString(log));
        }
        Files.move(partial, tar, StandardCopyOption.ATOMIC_MOVE);
        return tar;
    }

    /**
     * Commits a one-layer OCI image to {@code store}: the layer blob (an uncompressed tar) as it is, a config with
     * {@code env}, and an OCI manifest naming both.
     */
    public static Image commitOneLayer(ImageStore store, ImageRef name, Path layer, List<String> env)
            throws IOException {
        String layerDigest = putBlob(store, layer);
        long layerSize = Files.size(layer);
        String diffId = layerDigest; // an uncompressed layer's diff_id is its own digest
        String arch = System.getProperty("os.arch").equals("aarch64") ? "arm64" : "amd64";
        StringBuilder envJson = new StringBuilder();
        for (String e : env) {
            envJson.append(envJson.isEmpty() ? "" : ",").append('"').append(e.replace("\"", "\\\"")).append('"');
        }
        byte[] config = ("{\"architecture\":\"" + arch + "\",\"os\":\"linux\",\"config\":{\"Env\":[" + envJson
                + "]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" + diffId + "\"]}}")
                .getBytes(StandardCharsets.UTF_8);
        String configDigest = putBlob(store, config);
        byte[] manifest = ("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                + "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" + configDigest
                + "\",\"size\":" + config.length + "},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
                + "\"digest\":\""
                + layerDigest + "\",\"size\":" + layerSize + "}]}").getBytes(StandardCharsets.UTF_8);
        return store.commit(name, "sha256:" + sha256(manifest), manifest, config);
    }

    static String putBlob(ImageStore store, Path file) throws IOException {
        String digest;
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), sha256Digest())) {
            in.transferTo(OutputStream.nullOutputStream());
            digest = "sha256:" + HexFormat.of().formatHex(((DigestInputStream) in).getMessageDigest().digest());
        }
        if (!store.hasBlob(digest)) {
            try (BlobWriter w = store.openBlob(digest); InputStream in = Files.newInputStream(file)) {
                in.skipNBytes(w.offset());
                in.transferTo(w.stream());
                w.commit();
            }
        }
        return digest;
    }

    static String putBlob(ImageStore store, byte[] bytes) throws IOException {
        String digest = "sha256:" + sha256(bytes);
        if (!store.hasBlob(digest)) {
            try (BlobWriter w = store.openBlob(digest)) {
                w.stream().write(bytes, (int) w.offset(), (int) (bytes.length - w.offset()));
                w.commit();
            }
        }
        return digest;
    }

    static String sha256(byte[] bytes) {
        return HexFormat.of().formatHex(sha256Digest().digest(bytes));
    }

    private static MessageDigest sha256Digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
