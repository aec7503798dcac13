package dev.crucible.image.layer;

import static dev.crucible.image.layer.Sentinels.inode;
import static dev.crucible.image.layer.Sentinels.mode;
import static dev.crucible.image.layer.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import dev.crucible.testhost.Capability;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link LayerUnpacker} against crafted hostile layers, on real files: every test has a sentinel tree beside the
 * root ({@code outside/}) and checks after it ran that nothing there changed (contents, modes, link counts, names)
 * and that nothing appeared beside the root.
 */
class LayerUnpackerTest extends UnpackBesideSentinels {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid";

    LayerUnpackerTest() {
        super(SNAPSHOT, true);
    }

    // ---- names ----

    @Test
    void absoluteNamesLandBeneathTheRoot() throws IOException {
        apply(new CraftedLayer().file("/etc/motd", "hello").file(outsideAbsolute + "/secret", "planted").gzip(), "sha256:abs");

        assertThat(root.resolve("etc/motd")).hasContent("hello");
        assertThat(root.resolve(outsideAbsolute.substring(1)).resolve("secret")).hasContent("planted");
        assertThat(outside.resolve("secret")).hasContent("sentinel");
    }

    @ParameterizedTest
    @ValueSource(strings = {"../outside/secret", "a/../../outside/secret", "./../outside/secret", "usr/..",
            "a/b/../../../outside/secret"})
    void aDotDotComponentRefusesTheLayer(String name) throws IOException {
        ImageException e = refusal(new CraftedLayer().dir("a/").dir("a/b/").file(name, "pwned").gzip(), "sha256:dotdot");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("sha256:dotdot", "'" + name + "'", "'..' component");
    }

    @ParameterizedTest
    @ValueSource(strings = {".", "./", "/", ""})
    void onlyADirectoryMayNameTheRoot(String name) throws IOException {
        apply(new CraftedLayer().dir(name.isEmpty() ? "./" : name, 0700).file("kept", "k").plain(), "sha256:rootdir");
        assertThat(root.resolve("kept")).hasContent("k");

        ImageException link = refusal(new CraftedLayer().symlink(name, outsideAbsolute).plain(), "sha256:rootlink");
        assertThat(link.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(link.getMessage()).contains("sha256:rootlink", "image root");
        if (!name.endsWith("/")) { // a file entry whose name ends in '/' is a directory, as tar has it
            ImageException file = refusal(new CraftedLayer().file(name, "x").plain(), "sha256:rootfile");
            assertThat(file.failure()).isEqualTo(Failure.HOSTILE_LAYER);
            assertThat(file.getMessage()).contains("image root");
        }
        unpacker.finish();
        assertThat(mode(root)).isEqualTo(0755);
        assertThat(root.resolve("kept")).hasContent("k");
    }

    // ---- symlinks on the way ----

    @Test
    void aSymlinkPlantedEarlierInTheSameLayerIsNotWrittenThrough() throws IOException {
        ImageException relative = refusal(new CraftedLayer().symlink("escape", "../outside").file("escape/secret", "pwned")
                .plain(), "sha256:samelayer");
        ImageException absolute = refusal(new CraftedLayer().symlink("abs", outsideAbsolute).dir("abs/dir/")
                .file("abs/dir/inner", "pwned").plain(), "sha256:samelayerabs");

        assertThat(relative.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(relative.getMessage())
                .contains("sha256:samelayer", "'escape/secret'", "goes through symlink 'escape'");
        assertThat(absolute.getMessage()).contains("goes through symlink 'abs'");
        assertThat(Files.readSymbolicLink(root.resolve("escape"))).hasToString("../outside");
    }

    @Test
    void aSymlinkPlantedByALowerLayerIsNotWrittenThrough() throws IOException {
        apply(new CraftedLayer().symlink("etc", outsideAbsolute).symlink("var", "../outside").gzip(), "sha256:lower");

        ImageException file = refusal(new CraftedLayer().file("etc/secret", "pwned").zstd(), "sha256:upper");
        ImageException deep = refusal(new CraftedLayer().file("var/dir/inner", "pwned").zstd(), "sha256:upper2");
        ImageException whiteout = refusal(new CraftedLayer().file("etc/.wh.secret", "").zstd(), "sha256:upper3");
        ImageException opaque = refusal(new CraftedLayer().file("var/dir/.wh..wh..opq", "").zstd(), "sha256:upper4");

        for (ImageException e : List.of(file, deep, whiteout, opaque)) {
            assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
            assertThat(e.getMessage()).contains("goes through symlink");
        }
        assertThat(file.getMessage()).contains("sha256:upper", "'etc/secret'");
    }

    @Test
    void chainedRelativeSymlinksAreNotFollowed() throws IOException {
        ImageException e = refusal(new CraftedLayer().symlink("a", "b").symlink("b", "../..").dir("c/")
                .file("a/" + base.getFileName() + "/outside/secret", "pwned").plain(), "sha256:chain");
        ImageException viaB = refusal(new CraftedLayer().file("b/" + base.getFileName() + "/outside/secret", "pwned").plain(),
                "sha256:chain2");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("goes through symlink 'a'");
        assertThat(viaB.getMessage()).contains("goes through symlink 'b'");
    }

    @Test
    void anAbsoluteSymlinkToSlashIsNotFollowed() throws IOException {
        ImageException e = refusal(new CraftedLayer().symlink("r", "/").file("r" + outsideAbsolute + "/secret", "pwned").gzip(),
                "sha256:slash");
        ImageException etc = refusal(new CraftedLayer().file("r/etc/passwd", "pwned").gzip(), "sha256:slash2");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("goes through symlink 'r'");
        assertThat(etc.failure()).isEqualTo(Failure.HOSTILE_LAYER);
    }

    // ---- hard links ----

    @Test
    void aHardLinkOutOfTheRootIsRefused() throws IOException {
        ImageException dotdot = refusal(new CraftedLayer().hardlink("h", "../outside/secret").plain(), "sha256:hl1");
        ImageException absolute = refusal(new CraftedLayer().hardlink("h", outsideAbsolute + "/secret").plain(), "sha256:hl2");

        assertThat(dotdot.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(dotdot.getMessage()).contains("hard link target", "'..' component");
        assertThat(absolute.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(absolute.getMessage()).contains("does not exist in the image");
        assertThat(Files.exists(root.resolve("h"), NOFOLLOW)).isFalse();
    }

    @Test
    void aHardLinkThroughASymlinkIsRefused() throws IOException {
        apply(new CraftedLayer().symlink("escape", outsideAbsolute).plain(), "sha256:hl-lower");

        ImageException e = refusal(new CraftedLayer().hardlink("h", "escape/secret").plain(), "sha256:hl3");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("sha256:hl3", "'h'", "goes through symlink 'escape'");
    }

    @Test
    void aHardLinkToAMissingEntryOrADirectoryIsRefused() throws IOException {
        ImageException missing = refusal(new CraftedLayer().dir("usr/").hardlink("h", "usr/nothing").plain(), "sha256:hl4");
        ImageException missingDir = refusal(new CraftedLayer().hardlink("h", "nowhere/nothing").plain(), "sha256:hl5");
        ImageException directory = refusal(new CraftedLayer().hardlink("h", "usr").plain(), "sha256:hl6");
        ImageException itself = refusal(new CraftedLayer().file("x", "x").hardlink("x", "x").plain(), "sha256:hl7");

        assertThat(missing.getMessage()).contains("'usr/nothing' does not exist");
        assertThat(missingDir.getMessage()).contains("does not exist");
        assertThat(directory.getMessage()).contains("only regular files and symlinks");
        assertThat(itself.getMessage()).contains("other than itself");
        for (ImageException e : List.of(missing, missingDir, directory, itself)) {
            assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        }
    }

    @Test
    void writingOverAHardLinkReplacesTheNameNotTheSharedFile() throws IOException {
        apply(new CraftedLayer().file("a", "A").hardlink("b", "a").symlink("s", outsideAbsolute + "/secret").hardlink("t", "s")
                .gzip(), "sha256:links");
        assertThat(inode(root.resolve("b"))).isEqualTo(inode(root.resolve("a")));
        assertThat(Files.readSymbolicLink(root.resolve("t"))).hasToString(outsideAbsolute + "/secret");
        assertThat(inode(root.resolve("t"))).isEqualTo(inode(root.resolve("s")));

        apply(new CraftedLayer().file("b", "B").file("t", "T").gzip(), "sha256:over");

        assertThat(root.resolve("a")).hasContent("A");
        assertThat(root.resolve("b")).hasContent("B");
        assertThat(Files.getAttribute(root.resolve("a"), "unix:nlink")).isEqualTo(1);
        assertThat(Files.isRegularFile(root.resolve("t"), NOFOLLOW)).isTrue();
        assertThat(Files.readSymbolicLink(root.resolve("s"))).hasToString(outsideAbsolute + "/secret");
    }

    // ---- whiteouts ----

    @Test
    void aWhiteoutRemovesALowerFileButNotWhatItsOwnLayerWrote() throws IOException {
        apply(new CraftedLayer().file("etc/a", "A").file("etc/b", "B").file("etc/c", "C").gzip(), "sha256:l1");

        apply(new CraftedLayer().file("etc/.wh.a", "").file("etc/c", "C2").file("etc/.wh.c", "").file("etc/.wh.gone", "")
                .gzip(), "sha256:l2");

        assertThat(Files.exists(root.resolve("etc/a"), NOFOLLOW)).isFalse();
        assertThat(root.resolve("etc/b")).hasContent("B");
        assertThat(root.resolve("etc/c")).hasContent("C2");
        assertThat(names(root.resolve("etc"))).containsExactlyInAnyOrder("b", "c");
    }

    @Test
    void aWhiteoutRemovesALowerDirectoryTree() throws IOException {
        apply(new CraftedLayer().dir("opt/app/", 0500).file("opt/app/x", "x").file("opt/app/sub/y", "y")
                .symlink("opt/app/sub/up", "/").symlink("opt/app/out", outsideAbsolute).file("opt/keep", "k").plain(),
                "sha256:tree");

        apply(new CraftedLayer().file("opt/.wh.app", "").plain(), "sha256:wh");
        unpacker.finish();

        assertThat(names(root.resolve("opt"))).containsExactly("keep");
    }

    @Test
    void aWhiteoutOfASymlinkRemovesOnlyTheLink() throws IOException {
        apply(new CraftedLayer().file("data/keep", "k").symlink("link", "data").symlink("abs", outsideAbsolute)
                .symlink("parent", "..").plain(), "sha256:links");

        apply(new CraftedLayer().file(".wh.link", "").file(".wh.abs", "").file(".wh.parent", "").plain(), "sha256:wh");

        assertThat(names(root)).containsExactly("data");
        assertThat(root.resolve("data/keep")).hasContent("k");
    }

    /** Names travel as UTF-8 bytes through statx and readdir, whatever the JVM's locale makes of paths. */
    @Test
    void nonAsciiNamesAreWrittenListedAndRemoved() throws IOException {
        apply(new CraftedLayer().file("données/été.txt", "e").file("données/日本/語.txt", "j").file("ü/old", "o")
                .file("ü/ñ", "n").gzip(), "sha256:utf8");
        apply(new CraftedLayer().file(".wh.données", "").file("ü/.wh..wh..opq", "").file("ü/ñ", "n2").gzip(), "sha256:wh");

        assertThat(names(root)).hasSize(1);
        Capability.UTF8_PATHS.require();
        assertThat(names(root)).containsExactly("ü");
        assertThat(names(root.resolve("ü"))).containsExactly("ñ");
        assertThat(root.resolve("ü/ñ")).hasContent("n2");
    }

    @ParameterizedTest
    @ValueSource(strings = {".wh...", "etc/.wh..", ".wh.", "etc/.wh.x/y"})
    void aWhiteoutForDotDotOrUsedAsADirectoryIsRefused(String name) throws IOException {
        apply(new CraftedLayer().file("etc/x", "x").plain(), "sha256:l1");

        ImageException e = refusal(new CraftedLayer().file(name, "").plain(), "sha256:badwh");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("sha256:badwh", "whiteout");
        assertThat(root.resolve("etc/x")).hasContent("x");
    }

    /** The marker is put before, between and after the layer's own entries: the result must not depend on it. */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3})
    void anOpaqueDirectoryKeepsThisLayersEntriesWhateverTheOrder(int markerAt) throws IOException {
        apply(new CraftedLayer().file("d/old", "o").file("d/sub/old2", "o").file("d/kept/oldinner", "o").file("other", "o")
                .symlink("d/link", outsideAbsolute).gzip(), "sha256:lower");
        List<Consumer<CraftedLayer>> upper = new ArrayList<>(List.of(t -> t.file("d/new1", "n"),
                t -> t.file("d/kept/newinner", "n"), t -> t.dir("d/newdir/")));
        upper.add(markerAt, t -> t.file("d/.wh..wh..opq", ""));
        CraftedLayer layer = new CraftedLayer();
        upper.forEach(step -> step.accept(layer));

        apply(layer.zstd(), "sha256:opaque");

        assertThat(names(root.resolve("d"))).containsExactlyInAnyOrder("new1", "kept", "newdir");
        assertThat(names(root.resolve("d/kept"))).containsExactly("newinner");
        assertThat(root.resolve("other")).hasContent("o");
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
