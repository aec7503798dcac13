package dev.crucible.image.store;

import static dev.crucible.image.store.StoreFixtures.commit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An image whose layers are another stored image's plus one (a build, a session's commit, an image over a base the
 * store has) gets its root from a copy of that image's root whose files are hard links, and only its last layer is
 * unpacked: what the last layer replaces or deletes is the new root's alone, the parent's root is never written, and
 * a config that names other diff_ids for the parent's layers still finds them checked.
 */
class ImageStoreParentTest {
    private final byte[] base = new CraftedLayer().dir("etc").file("etc/os-release", "ID=crucible\n")
            .dir("usr").dir("usr/lib").file("usr/lib/kept.txt", "kept\n").file("usr/lib/replaced.txt", "old\n")
            .file("usr/lib/deleted.txt", "gone soon\n").dir("ro", 0555).file("ro/inside", "in\n").plain();
    private final byte[] top = new CraftedLayer().file("usr/lib/replaced.txt", "new\n")
            .file("usr/lib/.wh.deleted.txt", "").file("ro/added", "added\n").plain();

    @Test
    void aChildRootSharesTheParentsFilesAndUnpacksOnlyItsLastLayer(@TempDir Path dir) throws Exception {
        ImageStore store = ImageStore.open(dir.resolve("store"));
        Image parent = commit(store, "local/parent:1", "p", base);
        Image child = commit(store, "local/child:1", "c", base, top);

        Path p = parent.rootfs();
        Path c = child.rootfs();
        assertThat(c).isNotEqualTo(p);
        assertThat(Files.getAttribute(c.resolve("usr/lib/kept.txt"), "unix:ino"))
                .as("an untouched file is the parent's, linked").isEqualTo(Files.getAttribute(p.resolve(
                        "usr/lib/kept.txt"), "unix:ino"));
        assertThat(Files.readString(c.resolve("usr/lib/replaced.txt"))).isEqualTo("new\n");
        assertThat(Files.readString(p.resolve("usr/lib/replaced.txt"))).as("the parent's file was replaced, not"
                + " written").isEqualTo("old\n");
        assertThat(c.resolve("usr/lib/deleted.txt")).doesNotExist();
        assertThat(p.resolve("usr/lib/deleted.txt")).exists();
        assertThat(Files.readString(c.resolve("ro/added"))).isEqualTo("added\n");
        assertThat(p.resolve("ro/added")).doesNotExist();
        assertThat(StoreFixtures.mode(c.resolve("ro"))).as("a directory keeps its mode").isEqualTo(
                StoreFixtures.mode(p.resolve("ro")));
        assertThat(StoreFixtures.tree(c)).as("the same root a full unpack makes").isEqualTo(StoreFixtures.tree(
                fullUnpack(dir, base, top)));
    }

    @Test
    void aConfigNamingOtherDiffIdsForTheParentsLayersIsStillRefused(@TempDir Path dir) throws Exception {
        ImageStore store = ImageStore.open(dir.resolve("store"));
        commit(store, "local/parent:1", "p", base);
        StoreFixtures.putBlob(store, top);
        byte[] config = new String(StoreFixtures.config("c", List.of(base, top)), StandardCharsets.UTF_8)
                .replace(StoreFixtures.sha256(base), StoreFixtures.sha256("forged".getBytes(StandardCharsets.UTF_8)))
                .getBytes(StandardCharsets.UTF_8);
        byte[] manifest = StoreFixtures.manifest(config, List.of(base, top), ImageFormats.OCI_LAYER_TAR);
        assertThatThrownBy(() -> store.commit(ImageRef.parse("local/forged:1"), StoreFixtures.sha256(manifest),
                manifest, config)).isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                        .isEqualTo(ImageException.Failure.DIGEST_MISMATCH));
    }

    private static Path fullUnpack(Path dir, byte[]... layers) throws Exception {
        ImageStore alone = ImageStore.open(dir.resolve("alone"));
        return commit(alone, "local/alone:1", "c", layers).rootfs();
    }
}
