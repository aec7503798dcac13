package dev.crucible.image.archive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.layer.UnpackBesideSentinels;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;

/**
 * A review of image import as an attacker would go at it: archive entry names and layout index digests that name paths
 * outside the store. Every test keeps a sentinel tree beside the root ({@code outside/}) and checks after it ran that
 * nothing there changed.
 */
class ImageImportReviewTest extends UnpackBesideSentinels {
    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid,ctime";

    ImageImportReviewTest() {
        super(SNAPSHOT);
    }

    // ---- archive names and layout digests ----

    /** Archive entry names are keys, never paths: {@code ..} and absolute names reach no file outside the store. */
    @Test
    void aDockerSaveArchiveNamingPathsOutsideReadsAndWritesOnlyTheStore() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        Files.writeString(base.resolve("config.json"), "{}");
        byte[] layer = new CraftedLayer().file("k", "k").plain();
        String manifest = "[{\"Config\":\"../config.json\",\"RepoTags\":[\"evil:1\"],\"Layers\":[\"" + outsideAbsolute
                + "/secret\",\"../../outside/layer.tar\"]}]";
        Path archive = base.resolve("archive.tar");
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(Files.newOutputStream(archive))) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            add(tar, "manifest.json", manifest.getBytes(StandardCharsets.UTF_8));
            add(tar, "../../../outside/layer.tar", layer);
            add(tar, outsideAbsolute + "/planted.json", "{}".getBytes(StandardCharsets.UTF_8));
        }
        Path linked = base.resolve("linked.tar");
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(Files.newOutputStream(linked))) {
            TarArchiveEntry link = new TarArchiveEntry("manifest.json", TarConstants.LF_SYMLINK);
            link.setLinkName("/etc/passwd");
            tar.putArchiveEntry(link);
            tar.closeArchiveEntry();
            add(tar, "repositories", "{}".getBytes(StandardCharsets.UTF_8));
        }

        ImageException missing = catchThrowableOfType(ImageException.class,
                () -> new ImageImporter(store).importFrom(archive, null));
        ImageException notAnArchive = catchThrowableOfType(ImageException.class,
                () -> new ImageImporter(store).importFrom(linked, null));

        assertThat(missing.failure()).isEqualTo(Failure.NOT_FOUND);
        assertThat(missing.getMessage()).contains("lacks ../config.json");
        assertThat(notAnArchive.failure()).isEqualTo(Failure.UNSUPPORTED);
        assertThat(notAnArchive.getMessage()).doesNotContain("root:");
        try (Stream<Path> beside = Files.list(base)) {
            assertThat(beside.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("root", "outside",
                    "store", "config.json", "archive.tar", "linked.tar");
        }
        StoreFixtures.assertNothingVisible(store);
    }

    @Test
    void anOciLayoutIndexNamingABlobByAPathIsRefused() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        Path layout = Files.createDirectories(base.resolve("layout/blobs/sha256"));
        Files.writeString(base.resolve("layout/oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
        Files.writeString(base.resolve("layout/index.json"), "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\""
                + ImageFormats.OCI_MANIFEST + "\",\"digest\":\"sha256:../../../../outside/secret\",\"size\":8,"
                + "\"annotations\":{\"io.containerd.image.name\":\"docker.io/library/x:1\"}}]}");

        ImageException e = catchThrowableOfType(ImageException.class,
                () -> new ImageImporter(store).importFrom(layout.getParent().getParent(), null));

        assertThat(e.failure()).isEqualTo(Failure.INVALID_REFERENCE);
        StoreFixtures.assertNothingVisible(store);
    }

    // ---- helpers ----

    private static void add(TarArchiveOutputStream tar, String name, byte[] data) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name, true);
        e.setSize(data.length);
        tar.putArchiveEntry(e);
        tar.write(data);
        tar.closeArchiveEntry();
    }
}
