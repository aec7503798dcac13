package dev.crucible.image.layer;

import static dev.crucible.image.layer.Sentinels.inode;
import static dev.crucible.image.layer.Sentinels.mode;
import static dev.crucible.image.layer.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import dev.crucible.image.store.StoreFiles;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.time.Duration;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;

/**
 * A review of the trees {@link LayerUnpacker} builds as an attacker would go at them, beyond
 * {@link LayerUnpackerTest}: type swaps of one name within a tar, hard-link chains, the costs of whiteouts, opaque
 * markers and names, a chain as deep as PATH_MAX, and mount points an image tries to turn into links. Every test keeps
 * a sentinel tree beside the root ({@code outside/}) and checks after it ran that nothing there changed.
 */
class LayerUnpackerTreeReviewTest extends UnpackBesideSentinels {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid,ctime";

    LayerUnpackerTreeReviewTest() {
        super(SNAPSHOT);
    }

    // ---- one name swapped between types within one tar ----

    @Test
    void typeSwapsOfOneNameNeverReachOutside() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name())
                .dir("a/", 0755).symlink("a", outsideAbsolute).dir("a/", 0700).file("a/secret", "inside-a")
                .symlink("b", outsideAbsolute + "/secret").file("b", "inside-b", 0600)
                .symlink("c", outsideAbsolute).file("f", "F").hardlink("c", "f")
                .symlink("d", "../outside/dir").dir("d/", 0500)
                .symlink("e", outsideAbsolute + "/dir").dir("e/", 0755).file("e/inner", "inside-e")
                .plain(), "sha256:swaps");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("g", outsideAbsolute).plain(), "sha256:lower");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).dir("g/", 0500).file("g/secret", "inside-g").plain(), "sha256:upper");
        unpacker.finish();

        assertThat(root.resolve("a/secret")).hasContent("inside-a");
        assertThat(root.resolve("b")).hasContent("inside-b");
        assertThat(inode(root.resolve("c"))).isEqualTo(inode(root.resolve("f")));
        assertThat(Files.isDirectory(root.resolve("d"), NOFOLLOW)).isTrue();
        assertThat(mode(root.resolve("d"))).isEqualTo(0500);
        assertThat(root.resolve("e/inner")).hasContent("inside-e");
        assertThat(root.resolve("g/secret")).hasContent("inside-g");
        assertThat(mode(root.resolve("g"))).isEqualTo(0500);
    }

    /** The marker's own directory being a link (not only a parent of it) is refused too. */
    @Test
    void anOpaqueMarkerOrWhiteoutInADirectoryThatIsASymlinkIsRefused() throws IOException {
        ImageException same = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("d", outsideAbsolute).file("d/.wh..wh..opq", "").plain(),
                "sha256:opq1");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("l", outsideAbsolute + "/dir").plain(), "sha256:lower");
        ImageException lower = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("l/.wh..wh..opq", "").plain(), "sha256:opq2");
        ImageException whiteout = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("l/.wh.inner", "").plain(), "sha256:wh");

        for (ImageException e : List.of(same, lower, whiteout)) {
            assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
            assertThat(e.getMessage()).contains("goes through symlink");
        }
    }

    /** A whiteout of a name this layer made a symlink (to an outside directory) never prunes through the link. */
    @Test
    void aWhiteoutOfALinkThisLayerWroteKeepsTheLinkAndLeavesItsTarget() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).dir("x/", 0755).file("x/old", "o").plain(), "sha256:lower");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("x", outsideAbsolute).file(".wh.x", "").symlink("y", outsideAbsolute + "/dir")
                .file(".wh.y", "").file(".wh..wh..opq", "").plain(), "sha256:upper");

        assertThat(Files.readSymbolicLink(root.resolve("x"))).hasToString(outsideAbsolute);
        assertThat(Files.readSymbolicLink(root.resolve("y"))).hasToString(outsideAbsolute + "/dir");
        assertThat(names(root)).containsExactly("x", "y");
    }

    // ---- hard links ----

    @Test
    void hardLinkChainsShareOneInodeInside() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("f", "F").hardlink("h1", "f").hardlink("h2", "h1").hardlink("dir/h3", "/h2")
                .hardlink("h4", "./dir//h3").plain(), "sha256:chain");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(".wh.f", "").file("h2", "rewritten").plain(), "sha256:upper");

        assertThat(Files.exists(root.resolve("f"), NOFOLLOW)).isFalse();
        assertThat(root.resolve("h1")).hasContent("F");
        assertThat(root.resolve("h4")).hasContent("F");
        assertThat(root.resolve("h2")).hasContent("rewritten");
        assertThat(Files.getAttribute(root.resolve("h1"), "unix:nlink")).isEqualTo(3);
    }

    @Test
    void aHardLinkToASymlinkToOutsideIsNeverWrittenThrough() throws IOException {
        ImageException e = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("s", outsideAbsolute).hardlink("h", "s")
                .file("h/secret", "pwned").plain(), "sha256:hlsym");
        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("goes through symlink 'h'");

        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("s2", outsideAbsolute + "/secret").hardlink("h2", "s2").file("h2", "mine").plain(),
                "sha256:hlsym2");
        assertThat(root.resolve("h2")).hasContent("mine");
        assertThat(Files.readSymbolicLink(root.resolve("s2"))).hasToString(outsideAbsolute + "/secret");
    }

    @Test
    void aHardLinkOverADirectoryHoldingItsTargetIsRefused() throws IOException {
        ImageException e = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("d/f", "F").hardlink("d", "d/f").plain(), "sha256:hlparent");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("was removed by replacing 'd'");
    }

    /** A hard link costs no bytes but is an entry: millions of them need a cap of millions of entries. */
    @Test
    void hardLinksZeroLengthFilesAndWhiteoutsCountAgainstTheEntryCap() throws IOException {
        unpacker = LayerUnpacker.into(root, new LayerUnpacker.Caps(1 << 20, 1000, 4096, 200));
        CraftedLayer links = CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("f", "F");
        for (int i = 0; i < 1000; i++) {
            links.hardlink("h" + i, "f");
        }
        ImageException hard = refusal(links.gzip(), "sha256:links");
        assertThat(hard.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(hard.getMessage()).contains("more than 1000 entries");

        unpacker = LayerUnpacker.into(base.resolve("root2"), new LayerUnpacker.Caps(1 << 20, 1000, 4096, 200));
        CraftedLayer whiteouts = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        for (int i = 0; i < 1001; i++) {
            whiteouts.file(i % 2 == 0 ? ".wh.n" + i : "e" + i, "");
        }
        ImageException wh = refusal(whiteouts.gzip(), "sha256:whiteouts");
        assertThat(wh.failure()).isEqualTo(Failure.TOO_LARGE);
        StoreFiles.deleteTree(base.resolve("root2"));
    }

    // ---- whiteout and opaque costs ----

    /**
     * Every opaque marker (and every whiteout of a directory the layer wrote) used to walk its directory again: m
     * markers over n files of one layer cost m·n system calls (25000 over 5000: 143 s here, from a gzip layer of
     * 110 KiB). Each directory is pruned once per layer now. The timeout only guards against that, with a wide margin.
     */
    @Test
    void manyOpaqueMarkersAndWhiteoutsCostOnePassPerDirectory() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("d/lower", "l").file("d/sub/lower", "l").plain(), "sha256:lower");
        CraftedLayer layer = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        int n = 5000;
        for (int i = 0; i < n; i++) {
            layer.file("d/f" + i, "");
        }
        layer.dir("d/sub/", 0755).file("d/sub/new", "n");
        for (int i = 0; i < 5 * n; i++) {
            layer.file(i % 3 == 0 ? "d/.wh.sub" : i % 3 == 1 ? "d/.wh..wh..opq" : ".wh..wh..opq", "");
        }
        byte[] blob = layer.gzip();

        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> apply(blob, "sha256:markers")); // a guard, see above

        assertThat(names(root)).containsExactly("d");
        assertThat(names(root.resolve("d"))).hasSize(n + 1).doesNotContain("lower");
        assertThat(names(root.resolve("d/sub"))).containsExactly("new");
    }

    // ---- memory held per name ----

    /**
     * The unpacker keeps every path a layer wrote (whiteouts need them) and every directory's final mode: 2 million
     * entries of 4 KiB names would hold 8 GiB. The names of an image have their own cap.
     */
    @Test
    void theNameBytesAnImageHoldsAreCapped() throws IOException {
        assertThat(LayerUnpacker.Caps.defaults().maxNameBytes()).isLessThanOrEqualTo(256L << 20);
        unpacker = LayerUnpacker.into(root, new LayerUnpacker.Caps(1 << 20, 1000, 4096, 200, 100_000));
        String prefix = "p/".repeat(900);
        CraftedLayer first = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        for (int i = 0; i < 30; i++) {
            first.file(prefix + "f" + i, "");
        }
        apply(first.gzip(), "sha256:first");
        CraftedLayer second = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        for (int i = 0; i < 30; i++) {
            second.file(prefix + "g" + i, "");
        }

        ImageException e = refusal(second.gzip(), "sha256:second");

        assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(e.getMessage()).contains("sha256:second", "names", "100000");
        StoreFiles.deleteTree(root); // faster than the temp dir's clean-up through 900-deep absolute paths
    }

    // ---- a chain as deep as PATH_MAX ----

    /**
     * Removing or pruning a directory chain as deep as the kernel lets a name be (2044 levels) used to recurse once a
     * level and end in a StackOverflowError: an Error out of the unpacker, not a refusal.
     */
    @Test
    void aWhiteoutOrOpaqueMarkerOverAChainAsDeepAsPathMaxWorks() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(CraftedLayer.deepName(), "deep").file("b", "b").plain(), "sha256:deep");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(".wh.a", "").plain(), "sha256:whiteout");
        assertThat(names(root)).containsExactly("b");

        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(CraftedLayer.deepName().replace('a', 'c'), "deep").file(".wh..wh..opq", "").plain(), "sha256:opq");

        assertThat(names(root)).containsExactly("c");
        StoreFiles.deleteTree(root);
    }

    // ---- mount points ----

    /**
     * bwrap mounts over /proc, /dev, /tmp, /workspace, /build and binds files over /etc/passwd, group and hosts before
     * the sandbox's root is its root: a link at any of those names (or at /etc itself) would be followed from bwrap's
     * side. finish() replaces each with a directory or an empty regular file.
     */
    @Test
    void finishReplacesEveryMountPointAnImageMadeALinkFileOrSpecial() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).symlink("etc", outsideAbsolute).symlink("workspace", "/").file("build", "b")
                .file("x", "x").hardlink("proc", "x").symlink("dev", "../outside").dir("tmp/", 0)
                .special("tmp/fifo", TarConstants.LF_FIFO).plain(), "sha256:mounts");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).special("etc/hosts", TarConstants.LF_FIFO).plain(), "sha256:fifo");
        unpacker.finish();

        for (String dir : List.of("proc", "dev", "tmp", "workspace", "build", "etc")) {
            assertThat(Files.isDirectory(root.resolve(dir), NOFOLLOW)).as(dir).isTrue();
        }
        for (String file : List.of("passwd", "group", "hosts")) {
            assertThat(Files.isRegularFile(root.resolve("etc").resolve(file), NOFOLLOW)).as(file).isTrue();
            assertThat(root.resolve("etc").resolve(file)).isEmptyFile();
        }
        assertThat(names(root.resolve("etc"))).containsExactly("group", "hosts", "passwd");
        assertThat(root.resolve("x")).hasContent("x");
        assertThat(Files.getAttribute(root.resolve("x"), "unix:nlink")).isEqualTo(1);
    }

    /**
     * Safe but surprising: a mode a layer gives a mount-point directory is kept (0 here). bwrap then cannot reach
     * /etc/passwd as the sandbox's uid and the sandbox fails to start: the image only breaks itself.
     */
    @Test
    void aModeALayerGivesAMountPointIsKept() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).dir("etc/", 0).dir("tmp/", 0700).file("etc/passwd", "root:x:0:0::/:/bin/sh\n", 0).plain(),
                "sha256:modes");
        unpacker.finish();

        assertThat(mode(root.resolve("etc"))).isZero();
        assertThat(mode(root.resolve("tmp"))).isEqualTo(0700);
        assertThat(mode(root.resolve("etc/passwd"))).isZero();
        assertThat(mode(root)).isEqualTo(0755);
    }

    // ---- helpers ----

    private void apply(byte[] blob, String digest) throws IOException {
        unpacker.apply(new ByteArrayInputStream(blob), digest);
    }

    private ImageException refusal(byte[] blob, String digest) {
        ImageException e = catchThrowableOfType(ImageException.class, () -> apply(blob, digest));
        assertThat(e).as("layer " + digest + " is refused").isNotNull();
        return e;
    }
}
