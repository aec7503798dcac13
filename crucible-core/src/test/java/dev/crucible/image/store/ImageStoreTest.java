package dev.crucible.image.store;

import static dev.crucible.image.store.StoreFixtures.assertNothingVisible;
import static dev.crucible.image.store.StoreFixtures.commit;
import static dev.crucible.image.store.StoreFixtures.entries;
import static dev.crucible.image.store.StoreFixtures.mode;
import static dev.crucible.image.store.StoreFixtures.putBlob;
import static dev.crucible.image.store.StoreFixtures.sha256;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import java.io.Closeable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ImageStoreTest {
    @TempDir
    Path dir;

    private final byte[] base = new CraftedLayer().dir("etc").file("etc/os-release", "ID=crucible\n")
            .dir("bin").file("bin/tool", "#!/bin/sh\necho tool\n", 0755).plain();
    private final byte[] app = new CraftedLayer().dir("app").file("app/main.py", "print('a')\n")
            .symlink("app/os", "../etc/os-release").plain();
    private final byte[] other = new CraftedLayer().dir("srv").file("srv/data", "b\n").plain();

    private ImageStore store() throws IOException {
        return ImageStore.open(dir.resolve("images"));
    }

    private static ImageException.Failure failureOf(Throwable t) {
        return ((ImageException) t).failure();
    }

    @Test
    void aDigestMismatchDeletesThePartialAndLeavesNothingVisible() throws IOException {
        ImageStore store = store();
        String digest = sha256("the bytes meant".getBytes(StandardCharsets.UTF_8));
        try (BlobWriter writer = store.openBlob(digest)) {
            writer.stream().write("other bytes".getBytes(StandardCharsets.UTF_8));
            assertThatThrownBy(writer::commit).isInstanceOf(ImageException.class)
                    .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.DIGEST_MISMATCH))
                    .hasMessageContaining(digest);
        }
        assertThat(store.hasBlob(digest)).isFalse();
        assertThat(entries(store.dir().resolve("partial"))).isEmpty();
        assertThat(entries(store.dir().resolve("blobs").resolve("sha256"))).isEmpty();
    }

    @Test
    void anInterruptedDownloadResumesAtItsOffsetAndIsVerifiedWhole() throws IOException {
        byte[] blob = new byte[300_000];
        Arrays.fill(blob, (byte) 7);
        blob[299_999] = 1;
        String digest = sha256(blob);
        try (BlobWriter first = store().openBlob(digest)) {
            assertThat(first.offset()).isZero();
            first.stream().write(blob, 0, 150_000);
        } // killed pull: no commit
        ImageStore store = store();
        try (BlobWriter again = store.openBlob(digest)) {
            assertThat(again.offset()).isEqualTo(150_000);
            again.stream().write(blob, 150_000, 150_000);
            assertThat(again.commit()).isEqualTo(store.blob(digest));
        }
        assertThat(Files.readAllBytes(store.blob(digest))).isEqualTo(blob);
        assertThat(mode(store.blob(digest))).isEqualTo("rw-r--r--");
        assertThat(entries(store.dir().resolve("partial"))).isEmpty();
        try (BlobWriter stored = store.openBlob(digest)) {
            assertThat(stored.offset()).isEqualTo(blob.length);
        }
    }

    @Test
    void digestsAreValidatedStrictlyBeforeTheyBecomeFileNames() throws IOException {
        ImageStore store = store();
        assertThatThrownBy(() -> store.openBlob("sha512:" + "ab".repeat(64)))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.UNSUPPORTED));
        for (String bad : List.of("sha256:../../../etc/passwd", "sha256:" + "A".repeat(64), "sha256:abc", "")) {
            assertThatThrownBy(() -> store.openBlob(bad))
                    .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.INVALID_REFERENCE));
        }
        assertThat(store.hasBlob("sha256:../x")).isFalse();
    }

    @Test
    void commitRefusesAMissingLayerBlobAndShowsNothing() throws IOException {
        ImageStore store = store();
        byte[] config = StoreFixtures.config("missing", List.of(base));
        byte[] manifest = StoreFixtures.manifest(config, List.of(base), ImageFormats.OCI_LAYER_TAR);
        assertThatThrownBy(() -> store.commit(ImageRef.parse("app:1"), sha256(manifest), manifest, config))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.NOT_FOUND))
                .hasMessageContaining(sha256(base));
        assertNothingVisible(store);
        assertThat(store.hasBlob(sha256(manifest))).isFalse();
    }

    @Test
    void commitRefusesLayerMediaTypesItDoesNotUnpack() throws IOException {
        ImageStore store = store();
        putBlob(store, base);
        byte[] config = StoreFixtures.config("types", List.of(base));
        for (String type : List.of("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", "application/vnd.oci.image.layer.v1.tar+bzip2")) {
            byte[] manifest = StoreFixtures.manifest(config, List.of(base), type);
            assertThatThrownBy(() -> store.commit(ImageRef.parse("app:1"), sha256(manifest), manifest, config))
                    .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.UNSUPPORTED))
                    .hasMessageContaining(type);
        }
        assertNothingVisible(store);
    }

    @Test
    void commitRefusesAManifestOrConfigThatDoesNotHashToItsDigest() throws IOException {
        ImageStore store = store();
        putBlob(store, base);
        byte[] config = StoreFixtures.config("hash", List.of(base));
        byte[] manifest = StoreFixtures.manifest(config, List.of(base), ImageFormats.OCI_LAYER_TAR);
        String wrong = sha256("something else".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> store.commit(ImageRef.parse("app:1"), wrong, manifest, config))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.DIGEST_MISMATCH));
        byte[] otherConfig = StoreFixtures.config("other", List.of(base));
        assertThatThrownBy(() -> store.commit(ImageRef.parse("app:1"), sha256(manifest), manifest, otherConfig))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.DIGEST_MISMATCH));
        assertNothingVisible(store);
    }

    @Test
    void aFailedUnpackLeavesNoStagingDirAndNoName() throws IOException {
        ImageStore store = store();
        byte[] hostile = new CraftedLayer().file("../escaped", "out\n").plain();
        assertThatThrownBy(() -> commit(store, "hostile:1", "hostile", base, hostile))
                .isInstanceOf(ImageException.class)
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.HOSTILE_LAYER));
        assertNothingVisible(store);
        assertThat(store.find("hostile:1")).isEmpty();
        assertThat(dir.resolve("escaped")).doesNotExist();
    }

    @Test
    void openRemovesTheStagingDirsOfAKilledUnpackButNotOneInUse() throws IOException {
        ImageStore store = store();
        Path outside = Files.writeString(dir.resolve("outside"), "keep");
        Path staging = store.dir().resolve("staging");
        String idHex = "a".repeat(64);
        Path killed = Files.createDirectories(staging.resolve(idHex + ".1/usr/lib"));
        Files.writeString(killed.resolve("lib.so"), "x");
        Files.createSymbolicLink(killed.resolve("link"), outside);
        Files.createSymbolicLink(killed.resolve("dirlink"), dir);
        Files.setPosixFilePermissions(killed, PosixFilePermissions.fromString("r-xr-xr-x"));
        Files.createDirectories(staging.resolve("garbage"));
        String busyHex = "b".repeat(64);
        Path busy = Files.createDirectories(staging.resolve(busyHex + ".2"));
        try (Closeable lease = FileLocks.shared(RootBuilder.lockOf(store.dir().resolve("roots"), busyHex))) {
            store();
            assertThat(entries(staging)).containsExactly(busyHex + ".2");
            assertThat(busy).isDirectory();
        }
        store();
        assertThat(entries(staging)).isEmpty();
        assertThat(outside).hasContent("keep");
        assertThat(dir).isDirectory();
    }

    @Test
    void imagesWithACommonLayerStoreItOnceAndTheLayoutHasItsModes() throws IOException {
        ImageStore store = store();
        Image one = commit(store, "example.com/team/one:1.0", "one", base, app);
        Image two = commit(store, "two", "two", base, other);
        Path blobs = store.dir().resolve("blobs").resolve("sha256");
        // 3 distinct layers, 2 configs, 2 manifests: the base layer once
        assertThat(entries(blobs)).hasSize(7).contains(sha256(base).substring(7));
        assertThat(one.layers()).containsExactly(sha256(base), sha256(app));
        assertThat(one.rootfs()).isNotEqualTo(two.rootfs());
        assertThat(one.rootfs().resolve("app/main.py")).hasContent("print('a')\n");
        assertThat(one.rootfs().resolve("etc/os-release")).hasContent("ID=crucible\n");
        assertThat(two.rootfs().resolve("srv/data")).hasContent("b\n");
        assertThat(one.env()).containsExactly("PATH=/usr/bin:/bin", "SALT=one");
        assertThat(one.workingDir()).isEqualTo("/work");
        assertThat(one.entrypoint()).containsExactly("/bin/sh", "-c");
        assertThat(one.cmd()).containsExactly("echo hi");
        assertThat(one.platform()).startsWith("linux/");
        assertThat(one.size()).isEqualTo(base.length + app.length);
        for (String d : List.of("", "blobs", "blobs/sha256", "roots", "images")) {
            assertThat(mode(store.dir().resolve(d))).as(d).isEqualTo("rwxr-xr-x");
        }
        assertThat(mode(store.dir().resolve("partial"))).isEqualTo("rwx------");
        assertThat(mode(store.dir().resolve("staging"))).as("passable, never listable: a build's sandbox reaches its"
                + " copy by a random name").isEqualTo("rwx--x--x");
        assertThat(mode(one.rootfs())).isEqualTo("rwxr-xr-x");
        assertThat(entries(store.dir().resolve("staging"))).isEmpty();
    }

    @Test
    void aSecondNameOrManifestOfTheSameIdReusesItsRoot() throws IOException {
        ImageStore store = store();
        Image first = commit(store, "app:1", "same", base, app);
        Image second = commit(store, "app:latest", "same", base, app);
        assertThat(second.rootfs()).isEqualTo(first.rootfs());
        assertThat(second.created()).isEqualTo(first.created());
        assertThat(store.list()).extracting(Image::name)
                .containsExactly("docker.io/library/app:1", "docker.io/library/app:latest");
        assertThat(entries(store.dir().resolve("roots")).stream().filter(n -> !n.endsWith(".lock"))).hasSize(1);
    }

    @Test
    void concurrentCommitsOfOneImageShareOneRoot() throws Exception {
        ImageStore store = store();
        List<Future<Image>> commits = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 4; i++) {
                String name = "race:" + i;
                commits.add(threads.submit(() -> commit(ImageStore.open(dir.resolve("images")), name, "race", base, app)));
            }
        }
        Path root = commits.getFirst().get().rootfs();
        for (Future<Image> c : commits) {
            assertThat(c.get().rootfs()).isEqualTo(root);
        }
        assertThat(store.list()).hasSize(4);
        assertThat(root.resolve("app/main.py")).exists();
        assertThat(entries(store.dir().resolve("staging"))).isEmpty();
    }

    @Test
    void findTakesShortAndCanonicalNamesDigestsAndIdPrefixes() throws IOException {
        ImageStore store = store();
        Image image = commit(store, "busybox", "find", base);
        Image team = commit(store, "example.com/team/app:1.0", "team", base, app);
        assertThat(image.name()).isEqualTo("docker.io/library/busybox:latest");
        for (String ref : List.of("busybox", "busybox:latest", "docker.io/library/busybox:latest",
                "library/busybox", image.digest(), "busybox@" + image.digest(), image.id().substring(7, 19),
                image.digest().substring(7, 20), "sha256:" + image.id().substring(7, 30))) {
            assertThat(store.find(ref)).as(ref).map(Image::digest).contains(image.digest());
        }
        assertThat(store.find("example.com/team/app:1.0")).map(Image::rootfs).contains(team.rootfs());
        assertThat(store.find(image.id().substring(7, 18))).as("11 digits are too few").isEmpty();
        assertThat(store.find("busybox:1")).isEmpty();
        assertThat(store.find("other@" + image.digest())).as("the digest of another repository").isEmpty();
        assertThat(store.find("sha256:" + "0".repeat(64))).isEmpty();
        assertThat(store.find("not a reference")).isEmpty();
    }

    @Test
    void rmThenPruneFreesOnlyWhatTheRemovedImageAloneUsed() throws IOException {
        ImageStore store = store();
        Image kept = commit(store, "kept:1", "kept", base, app);
        Image gone = commit(store, "gone:1", "gone", base, other);
        Path oldPartial = Files.writeString(store.dir().resolve("partial").resolve("sha256-" + "c".repeat(64)), "old");
        Files.setLastModifiedTime(oldPartial, FileTime.from(Instant.now().minus(Duration.ofDays(2))));
        Path freshPartial = Files.writeString(store.dir().resolve("partial").resolve("sha256-" + "d".repeat(64)), "new");

        assertThat(store.remove("gone:1")).extracting(Image::name).containsExactly("docker.io/library/gone:1");
        assertThat(store.find("gone:1")).isEmpty();
        assertThat(gone.rootfs()).isDirectory(); // until prune
        ImageStore.Pruned pruned = store.prune();

        assertThat(pruned).extracting(ImageStore.Pruned::images, ImageStore.Pruned::roots, ImageStore.Pruned::blobs,
                ImageStore.Pruned::partials, ImageStore.Pruned::rootsInUse).containsExactly(1, 1, 3, 1, 0);
        assertThat(pruned.bytesFreed()).isGreaterThan(other.length);
        assertThat(gone.rootfs()).doesNotExist();
        assertThat(store.hasBlob(sha256(other))).isFalse();
        assertThat(store.hasBlob(gone.digest())).isFalse();
        assertThat(store.hasBlob(gone.id())).isFalse();
        for (String digest : List.of(sha256(base), sha256(app), kept.digest(), kept.id())) {
            assertThat(store.hasBlob(digest)).as(digest).isTrue();
        }
        assertThat(kept.rootfs().resolve("app/main.py")).exists();
        assertThat(store.find("kept:1")).isPresent();
        assertThat(oldPartial).doesNotExist();
        assertThat(freshPartial).exists();
        assertThatThrownBy(() -> store.remove("gone:1"))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.NOT_FOUND));
    }

    @Test
    void pruneSkipsALeasedRootUntilTheLeaseEnds() throws IOException {
        ImageStore store = store();
        Image image = commit(store, "leased:1", "leased", base);
        try (Closeable lease = store.lease(image)) {
            store.remove(image.digest());
            ImageStore.Pruned pruned = store.prune();
            assertThat(pruned.rootsInUse()).isEqualTo(1);
            assertThat(pruned.roots()).isZero();
            assertThat(image.rootfs().resolve("etc/os-release")).exists();
        }
        ImageStore.Pruned after = store.prune();
        assertThat(after.roots()).isEqualTo(1);
        assertThat(image.rootfs()).doesNotExist();
        assertThat(entries(store.dir().resolve("roots"))).isEmpty();
        assertThatThrownBy(() -> store.lease(image))
                .satisfies(e -> assertThat(failureOf(e)).isEqualTo(ImageException.Failure.NOT_FOUND));
    }
}
