package dev.crucible.image.store;

import static dev.crucible.image.layer.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.layer.LayerUnpacker;
import dev.crucible.image.layer.UnpackBesideSentinels;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.os.Linux;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

/**
 * A review of the image store as an attacker would go at it: trees deeper than PATH_MAX or made unreadable by a layer,
 * names and metadata that point outside the store, manifests that name blobs by paths, and an image that claims
 * another image's config. Every test keeps a sentinel tree beside an unpacking root ({@code outside/}) and checks
 * after it ran that nothing there changed.
 */
class ImageStoreReviewTest extends UnpackBesideSentinels {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    /** A uid no sandbox slot uses (slots start at 61000), to act as a server that is not root. */
    private static final int NOT_ROOT = 43210;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid,ctime";

    ImageStoreReviewTest() {
        super(SNAPSHOT);
    }

    // ---- the store's trees: deep, unreadable ----

    /** A tree whose absolute paths pass PATH_MAX (4096): java.nio cannot name its deepest directories. */
    @Test
    void aTreeDeeperThanPathMaxIsDeleted() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(CraftedLayer.deepName(), "deep").plain(), "sha256:deep");
        unpacker.finish();
        assertThat(root.toAbsolutePath().toString().length() + CraftedLayer.deepName().length()).isGreaterThan(4096);

        StoreFiles.deleteTree(root);

        assertThat(Files.exists(root, NOFOLLOW)).isFalse();
    }

    /**
     * A refused layer that first made a tree past PATH_MAX: its staging directory used to stay (deleteTree failed),
     * and every later {@link ImageStore#open} then failed on it. The store must stay usable.
     */
    @Test
    void aRefusedDeepLayerLeavesTheStoreOpenable() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        byte[] hostile = new CraftedLayer().file(CraftedLayer.deepName(), "deep").file("../escape", "x").plain();

        assertThatThrownBy(() -> StoreFixtures.commit(store, "deep:1", "deep", hostile))
                .isInstanceOf(ImageException.class)
                .satisfies(e -> assertThat(((ImageException) e).failure()).isEqualTo(Failure.HOSTILE_LAYER));

        assertThat(StoreFixtures.entries(store.dir().resolve("staging"))).isEmpty();
        ImageStore.open(base.resolve("store"));
        Image image = StoreFixtures.commit(store, "deep:2", "deep2", new CraftedLayer().file(CraftedLayer.deepName(), "d")
                .plain());
        store.remove("deep:2");
        assertThat(store.prune().roots()).isEqualTo(1);
        assertThat(image.rootfs()).doesNotExist();
    }

    /**
     * A server that is not root cannot open a directory a layer made 0000 or 0300 (no read for its owner) until it
     * gives it back its rights: deleteTree must do that before it reads the directory, not after.
     */
    @Test
    void aServerThatIsNotRootDeletesDirectoriesALayerMadeUnreadable() throws Exception {
        Path owned = Files.createDirectories(base.resolve("owned"));
        unpacker = LayerUnpacker.into(owned.resolve("root"), LayerUnpacker.Caps.defaults());
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).dir("none/", 0).file("none/f", "f").dir("wx/", 0300).dir("wx/sub/", 0)
                .file("wx/sub/g", "g").dir("rx/", 0500).file("rx/h", "h").plain(), "sha256:unreadable");
        unpacker.finish();
        chownTree(owned, NOT_ROOT);
        Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxr-xr-x"));

        long freed = asUid(NOT_ROOT, () -> StoreFiles.deleteTree(owned.resolve("root")));

        assertThat(Files.exists(owned.resolve("root"), NOFOLLOW)).isFalse();
        assertThat(freed).isEqualTo(3);
    }

    // ---- store paths, names and metadata ----

    @Test
    void aNamesTableOrMetadataPointingOutsideTheStoreIsRefused() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        Image kept = StoreFixtures.commit(store, "kept:1", "kept", new CraftedLayer().file("k", "k").plain());
        Path names = store.dir().resolve("names.json");
        String table = Files.readString(names);
        Files.writeString(names, table.replaceFirst("\\{", "{\n  \"docker.io/library/evil:1\" : \"sha256:../../../"
                + base.relativize(outside) + "/secret\","));
        String fakeHex = "e".repeat(64);
        Files.writeString(store.dir().resolve("images").resolve(fakeHex + ".json"), """
                {"name":"x","digest":"sha256:%s","id":"sha256:../../../outside","rootfs":"%s",
                 "layers":["sha256:../../../outside/secret"],"size":0}
                """.formatted(fakeHex, outsideAbsolute));
        Files.writeString(names, Files.readString(names).replaceFirst("\\{", "{\n  \"docker.io/library/meta:1\" : "
                + "\"sha256:" + fakeHex + "\","));

        for (String reference : List.of("evil:1", "meta:1")) {
            assertThatThrownBy(() -> store.find(reference)).as(reference).isInstanceOf(ImageException.class)
                    .satisfies(e -> assertThat(((ImageException) e).failure()).isEqualTo(Failure.INVALID_REFERENCE));
        }
        assertThatThrownBy(store::prune).isInstanceOf(ImageException.class);
        assertThatThrownBy(() -> store.blob("sha256:../../outside/secret"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.lease(new Image("x", kept.digest(), "sha256:../../" + outsideAbsolute, null,
                List.of(), null, List.of(), List.of(), "linux/amd64", 0, null, List.of())))
                .satisfies(e -> assertThat(((ImageException) e).failure()).isEqualTo(Failure.INVALID_REFERENCE));
        assertThat(kept.rootfs().resolve("k")).hasContent("k");
    }

    @Test
    void aManifestNamingALayerOrConfigByAPathIsRefusedBeforeAnyFileIsNamed() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        byte[] layer = new CraftedLayer().file("k", "k").plain();
        byte[] config = StoreFixtures.config("paths", List.of(layer));
        String manifest = new String(StoreFixtures.manifest(config, List.of(layer), ImageFormats.OCI_LAYER_TAR),
                StandardCharsets.UTF_8);
        byte[] badLayer = manifest.replace(StoreFixtures.sha256(layer), "sha256:../../outside/secret")
                .getBytes(StandardCharsets.UTF_8);
        byte[] badConfig = manifest.replace(StoreFixtures.sha256(config), "sha256:../../outside/secret")
                .getBytes(StandardCharsets.UTF_8);

        for (byte[] m : List.of(badLayer, badConfig)) {
            assertThatThrownBy(() -> store.commit(ImageRef.parse("p:1"), StoreFixtures.sha256(m), m, config))
                    .satisfies(e -> assertThat(((ImageException) e).failure()).isEqualTo(Failure.INVALID_REFERENCE));
        }
        StoreFixtures.assertNothingVisible(store);
    }

    // ---- one config, other layers ----

    /**
     * Roots are shared by image id (the config's digest). A manifest that pairs a published config with layers of its
     * own used to get its root stored under that id, and the genuine image pulled later ran in it. The layers must
     * unpack to the config's diff_ids.
     */
    @Test
    void anImageCannotPlantTheRootOfAnotherImagesConfig() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        byte[] good = new CraftedLayer().file("which", "good").plain();
        byte[] evil = new CraftedLayer().file("which", "evil").plain();
        byte[] config = StoreFixtures.config("shared", List.of(good));
        byte[] evilManifest = StoreFixtures.manifest(config, List.of(evil), ImageFormats.OCI_LAYER_TAR);
        StoreFixtures.putBlob(store, evil);

        ImageException e = catchThrowableOfType(ImageException.class, () -> store.commit(ImageRef.parse("evil:1"),
                StoreFixtures.sha256(evilManifest), evilManifest, config));

        assertThat(e).isNotNull();
        assertThat(e.failure()).isEqualTo(Failure.DIGEST_MISMATCH);
        assertThat(e.getMessage()).contains(StoreFixtures.sha256(evil), StoreFixtures.sha256(good), "diff_ids");
        StoreFixtures.assertNothingVisible(store);
        Image genuine = StoreFixtures.commit(store, "good:1", "shared", good);
        assertThat(genuine.rootfs().resolve("which")).hasContent("good");
    }

    @Test
    void aConfigWhoseDiffIdsDoNotCountTheLayersIsUnsupported() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        byte[] one = new CraftedLayer().file("a", "a").plain();
        byte[] two = new CraftedLayer().file("b", "b").plain();
        byte[] config = StoreFixtures.config("count", List.of(one));
        byte[] manifest = StoreFixtures.manifest(config, List.of(one, two), ImageFormats.OCI_LAYER_TAR);
        StoreFixtures.putBlob(store, one);
        StoreFixtures.putBlob(store, two);

        ImageException e = catchThrowableOfType(ImageException.class, () -> store.commit(ImageRef.parse("count:1"),
                StoreFixtures.sha256(manifest), manifest, config));

        assertThat(e.failure()).isEqualTo(Failure.UNSUPPORTED);
        assertThat(e.getMessage()).contains("diff_ids");
        StoreFixtures.assertNothingVisible(store);
    }

    /** A compressed layer's diff_id is the digest of its uncompressed tar, trailing padding included. */
    @Test
    void aGzipLayerIsCheckedAgainstItsUncompressedDiffId() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        byte[] tar = new CraftedLayer().file("which", "gz").plain();
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (OutputStream out = new GZIPOutputStream(gz)) {
            out.write(tar);
        }
        byte[] layer = gz.toByteArray();
        byte[] config = StoreFixtures.config("gz", List.of(tar));
        byte[] manifest = StoreFixtures.manifest(config, List.of(layer), ImageFormats.OCI_LAYER_GZIP);
        StoreFixtures.putBlob(store, layer);

        Image image = store.commit(ImageRef.parse("gz:1"), StoreFixtures.sha256(manifest), manifest, config);

        assertThat(image.rootfs().resolve("which")).hasContent("gz");
    }

    // ---- helpers ----

    private void apply(byte[] blob, String digest) throws IOException {
        unpacker.apply(new ByteArrayInputStream(blob), digest);
    }

    @FunctionalInterface
    private interface AsUid<T> {
        T call() throws IOException;
    }

    /** Runs {@code call} on this (platform) thread with {@code uid} as its file-system uid and gid. */
    private static <T> T asUid(int uid, AsUid<T> call) throws IOException {
        Linux.setfsids(uid, uid);
        try {
            return call.call();
        } finally {
            Linux.setfsids(0, 0);
            assertThat(Linux.fsuid()).isZero();
        }
    }

    private static void chownTree(Path top, int uid) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("chown", "-R", "-h", uid + ":" + uid, top.toString()).inheritIO().start();
        assertThat(p.waitFor()).isZero();
    }

}
