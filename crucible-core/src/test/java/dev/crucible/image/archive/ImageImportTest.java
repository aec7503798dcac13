package dev.crucible.image.archive;

import static dev.crucible.image.store.StoreFixtures.assertNothingVisible;
import static dev.crucible.image.store.StoreFixtures.skopeo;
import static dev.crucible.image.store.StoreFixtures.tree;
import static dev.crucible.image.store.StoreFixtures.umociLayout;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ImageImportTest {
    @TempDir
    Path dir;

    private static ImageException.Failure failureOf(Throwable t) {
        return ((ImageException) t).failure();
    }

    private List<Image> importInto(String storeName, Path source, String tag) throws IOException {
        return new ImageImporter(ImageStore.open(dir.resolve(storeName))).importFrom(source, tag);
    }

    /** An OCI layout of two layers (a file replaced, a link, an executable), and its docker-save and OCI archives. */
    private Path layout() throws IOException, InterruptedException {
        Path one = new CraftedLayer().dir("etc").file("etc/greeting", "hello\n").dir("usr/bin")
                .file("usr/bin/greet", "#!/bin/sh\ncat /etc/greeting\n", 0755).writeTo(dir.resolve("one.tar"));
        Path two = new CraftedLayer().file("etc/greeting", "bonjour\n").symlink("usr/bin/hi", "greet")
                .dir("opt/data").file("opt/data/x", "x").writeTo(dir.resolve("two.tar"));
        return umociLayout(dir, "v1", one, two);
    }

    @Test
    void dockerSaveOciDirectoryAndOciArchiveGiveTheSameRoot() throws Exception {
        Path layout = layout();
        skopeo(dir, "oci:" + layout + ":v1", "docker-archive:" + dir.resolve("saved.tar") + ":example.com/team/img:v1");
        skopeo(dir, "oci:" + layout + ":v1", "oci-archive:" + dir.resolve("oci.tar") + ":v1");

        List<Image> saved = importInto("a", dir.resolve("saved.tar"), null);
        List<Image> fromDir = importInto("b", layout, "example.com/team/img:v1");
        List<Image> fromTar = importInto("c", dir.resolve("oci.tar"), "example.com/team/img:v1");

        assertThat(saved).extracting(Image::name).containsExactly("example.com/team/img:v1");
        assertThat(fromDir.getFirst().id()).isEqualTo(saved.getFirst().id()).isEqualTo(fromTar.getFirst().id());
        assertThat(fromDir.getFirst().digest()).isEqualTo(fromTar.getFirst().digest());
        Map<String, String> root = tree(saved.getFirst().rootfs());
        assertThat(root).containsEntry("etc/greeting", tree(fromDir.getFirst().rootfs()).get("etc/greeting"))
                .containsKeys("usr/bin/greet", "usr/bin/hi", "opt/data/x");
        assertThat(saved.getFirst().rootfs().resolve("etc/greeting")).hasContent("bonjour\n");
        assertThat(tree(fromDir.getFirst().rootfs())).isEqualTo(root);
        assertThat(tree(fromTar.getFirst().rootfs())).isEqualTo(root);
        ImageStore a = ImageStore.open(dir.resolve("a"));
        assertThat(a.find("example.com/team/img:v1")).isPresent();
        assertThat(a.hasBlob(saved.getFirst().digest())).as("the synthesized manifest is stored").isTrue();
    }

    @Test
    void aGzippedDockerSaveArchiveImports() throws Exception {
        Path layout = layout();
        Path saved = dir.resolve("saved.tar");
        skopeo(dir, "oci:" + layout + ":v1", "docker-archive:" + saved + ":app:v1");
        Path gz = dir.resolve("saved.tar.gz");
        try (OutputStream out = new GzipCompressorOutputStream(Files.newOutputStream(gz))) {
            Files.copy(saved, out);
        }
        assertThat(importInto("s", gz, null)).extracting(Image::name).containsExactly("docker.io/library/app:v1");
    }

    @Test
    void aLayoutNamedOnlyByABareTagNeedsTag() throws Exception {
        Path layout = layout();
        ImageStore store = ImageStore.open(dir.resolve("s"));
        assertThatThrownBy(() -> new ImageImporter(store).importFrom(layout, null))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.INVALID_REFERENCE))
                .hasMessageContaining("--tag").hasMessageContaining("'v1'");
        assertNothingVisible(store);
    }

    @Test
    void anUnnamedDockerSaveArchiveNeedsTag() throws Exception {
        Path layout = layout();
        Path saved = dir.resolve("unnamed.tar");
        skopeo(dir, "oci:" + layout + ":v1", "docker-archive:" + saved);
        ImageStore store = ImageStore.open(dir.resolve("s"));
        assertThatThrownBy(() -> new ImageImporter(store).importFrom(saved, null))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.INVALID_REFERENCE))
                .hasMessageContaining("--tag");
        assertNothingVisible(store);
    }

    @Test
    void aNestedIndexGivesTheHostsPlatformNamedByItsFullNameAnnotation() throws IOException {
        Path layout = dir.resolve("layout");
        Path blobs = Files.createDirectories(layout.resolve("blobs").resolve("sha256"));
        ImageFormats.Platform host = ImageFormats.Platform.host();
        ImageFormats.Platform foreign = new ImageFormats.Platform("linux", host.architecture().equals("s390x")
                ? "riscv64" : "s390x", null);
        ImageFormats.Descriptor mine = platformImage(blobs, "host", host);
        ImageFormats.Descriptor theirs = platformImage(blobs, "foreign", foreign);
        byte[] nested = ImageFormats.JSON.writeValueAsBytes(new ImageFormats.Index(2, ImageFormats.OCI_INDEX,
                List.of(theirs, mine)));
        String nestedDigest = blob(blobs, nested);
        byte[] index = ImageFormats.JSON.writeValueAsBytes(new ImageFormats.Index(2, ImageFormats.OCI_INDEX, List.of(
                new ImageFormats.Descriptor(ImageFormats.OCI_INDEX, nestedDigest, nested.length, Map.of(
                        OciLayoutImport.CONTAINERD_NAME, "docker.io/library/multi:2", OciLayoutImport.REF_NAME, "2"), null))));
        Files.write(layout.resolve("index.json"), index);
        Files.writeString(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");

        List<Image> images = importInto("s", layout, null);

        assertThat(images).extracting(Image::name, Image::digest).containsExactly(
                tuple("docker.io/library/multi:2", mine.digest()));
        assertThat(images.getFirst().rootfs().resolve("which")).hasContent("host");
    }

    /** Writes an image of one layer (a file {@code which} saying {@code salt}) into a layout's blobs. */
    private static ImageFormats.Descriptor platformImage(Path blobs, String salt, ImageFormats.Platform platform)
            throws IOException {
        byte[] layer = new CraftedLayer().file("which", salt).plain();
        byte[] config = StoreFixtures.config(salt, List.of(layer));
        byte[] manifest = StoreFixtures.manifest(config, List.of(layer), ImageFormats.OCI_LAYER_TAR);
        blob(blobs, layer);
        blob(blobs, config);
        return new ImageFormats.Descriptor(ImageFormats.OCI_MANIFEST, blob(blobs, manifest), manifest.length, null,
                platform);
    }

    private static String blob(Path blobs, byte[] bytes) throws IOException {
        String digest = StoreFixtures.sha256(bytes);
        Files.write(blobs.resolve(digest.substring(7)), bytes);
        return digest;
    }

    @Test
    void somethingThatIsNotAnImageArchiveIsUnsupported() throws IOException {
        Path text = Files.writeString(dir.resolve("notes.txt"), "not an archive\n".repeat(100));
        Path plainTar = dir.resolve("plain.tar");
        Files.write(plainTar, tar(Map.of("hello.txt", "hi".getBytes(StandardCharsets.UTF_8))));
        Path emptyDir = Files.createDirectories(dir.resolve("empty"));
        ImageStore store = ImageStore.open(dir.resolve("s"));
        for (Path source : List.of(text, plainTar, emptyDir)) {
            assertThatThrownBy(() -> new ImageImporter(store).importFrom(source, null)).as(source.toString())
                    .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.UNSUPPORTED))
                    .hasMessageContaining("docker save").hasMessageContaining("OCI image layout");
        }
        assertThatThrownBy(() -> new ImageImporter(store).importFrom(dir.resolve("missing.tar"), null))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.NOT_FOUND));
        assertNothingVisible(store);
    }

    @Test
    void aBlobThatDoesNotHashToItsNameIsRefused() throws IOException {
        byte[] layer = new CraftedLayer().file("f", "real").plain();
        byte[] forged = new CraftedLayer().file("f", "forged").plain();
        String name = "blobs/sha256/" + StoreFixtures.sha256(layer).substring(7);
        Path archive = dir.resolve("forged.tar");
        Files.write(archive, tar(Map.of("oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}".getBytes(StandardCharsets.UTF_8),
                name, forged)));
        ImageStore store = ImageStore.open(dir.resolve("s"));
        assertThatThrownBy(() -> new ImageImporter(store).importFrom(archive, "x:1"))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.DIGEST_MISMATCH))
                .hasMessageContaining(archive.toString());
        assertThat(store.hasBlob(StoreFixtures.sha256(layer))).isFalse();
        assertThat(StoreFixtures.entries(store.dir().resolve("partial"))).isEmpty();
        assertNothingVisible(store);
    }

    private static byte[] tar(Map<String, byte[]> files) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                TarArchiveEntry e = new TarArchiveEntry(f.getKey());
                e.setSize(f.getValue().length);
                tar.putArchiveEntry(e);
                tar.write(f.getValue());
                tar.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }
}
