package dev.crucible.image;

import dev.crucible.image.ImageException.Failure;
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
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import static dev.crucible.image.Sentinels.inode;
import static dev.crucible.image.Sentinels.mode;
import static dev.crucible.image.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A review of image unpacking as an attacker would go at it, beyond {@link LayerUnpackerTest}: PAX, global and sparse
 * headers, type swaps of one name within a tar, mount points an image tries to turn into links, hard-link and whiteout
 * costs, the store's own paths (deep trees, unreadable directories, names and metadata that point outside), and an
 * image that claims another image's config. Every test keeps a sentinel tree beside the root ({@code outside/}) and
 * checks after it ran that nothing there changed.
 */
class LayerUnpackerReviewTest {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    /** A uid no sandbox slot uses (slots start at 61000), to act as a server that is not root. */
    private static final int NOT_ROOT = 43210;

    @TempDir
    Path base;

    Path root;
    Path outside;
    String outsideAbsolute;
    Map<String, String> outsideBefore;
    LayerUnpacker unpacker;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid,ctime";

    @BeforeEach
    void plantSentinels() throws IOException {
        Sentinels.Planted planted = Sentinels.plant(base, SNAPSHOT);
        root = planted.root();
        outside = planted.outside();
        outsideAbsolute = planted.outsideAbsolute();
        outsideBefore = planted.before();
        unpacker = LayerUnpacker.into(root, LayerUnpacker.Caps.defaults());
    }

    @AfterEach
    void nothingOutsideTheRootChanged() throws IOException {
        assertThat(Sentinels.snapshot(outside, SNAPSHOT)).isEqualTo(outsideBefore);
    }

    // ---- PAX headers, encodings and odd names ----

    @Test
    void paxRecordsThatOverrideNamesAreJudgedAfterTheyApply() throws IOException {
        ImageException path = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("path", "../outside/secret")).file("benign", "pwned")
                .plain(), "sha256:paxpath");
        ImageException linkpath = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("f", "f").pax(Map.of("linkpath", "../outside/secret"))
                .hardlink("h", "f").plain(), "sha256:paxlink");
        ImageException nul = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("path", "etc/passwd\u0000/../../x")).file("benign", "x")
                .plain(), "sha256:paxnul");
        ImageException sparseName = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("GNU.sparse.size", "1", "GNU.sparse.numblocks", "1",
                "GNU.sparse.map", "0,1", "GNU.sparse.name", "../outside/secret")).file("benign", "x").plain(),
                "sha256:sparsename");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("path", outsideAbsolute + "/secret")).file("benign", "inside").plain(),
                "sha256:paxabs");

        for (ImageException e : List.of(path, linkpath, sparseName)) {
            assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
            assertThat(e.getMessage()).contains("'..' component");
        }
        assertThat(path.getMessage()).contains("'../outside/secret'");
        assertThat(linkpath.getMessage()).contains("hard link target");
        assertThat(nul.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(nul.getMessage()).contains("NUL");
        assertThat(root.resolve(outsideAbsolute.substring(1)).resolve("secret")).hasContent("inside");
        assertThat(Files.exists(root.resolve("benign"), NOFOLLOW)).isFalse();
    }

    /** commons-compress applies a global header's {@code path} to every later entry: the rules still see it. */
    @Test
    void aGlobalPaxPathIsJudgedLikeAnyName() throws IOException {
        ImageException e = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).global(Map.of("path", "../outside/secret")).file("benign", "pwned")
                .plain(), "sha256:globalpath");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("'..' component");
    }

    /**
     * Global PAX headers are merged by the tar reader into one map kept for the rest of the layer and copied into
     * every later entry: unchecked, a few MiB of them would hold the heap and make each entry cost a copy of them all.
     */
    @Test
    void globalPaxHeadersCannotPileUpAcrossEntries() throws IOException {
        CraftedLayer layer = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        for (int i = 0; i < 20; i++) {
            Map<String, String> records = new LinkedHashMap<>();
            for (int k = 0; k < 2000; k++) {
                records.put("k" + i + "." + k, "v");
            }
            layer.global(records).file("f" + i, "x");
        }

        ImageException e = refusal(layer.gzip(), "sha256:globals");

        assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(e.getMessage()).contains("sha256:globals", "PAX records");
        assertThat(unpacker.entries()).isLessThanOrEqualTo(1);
    }

    /** A git-archive style global comment (one record) is fine. */
    @Test
    void aSingleGlobalCommentIsRead() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).global(Map.of("comment", "0123456789abcdef")).file("a", "A").file("b", "B").plain(),
                "sha256:comment");

        assertThat(root.resolve("a")).hasContent("A");
        assertThat(root.resolve("b")).hasContent("B");
    }

    /** Overlong UTF-8 for '.' decodes to replacement characters, never to "..". */
    @Test
    void overlongUtf8DotsAreNotDotDot() throws IOException {
        CraftedLayer latin1 = CraftedLayer.rawNames(StandardCharsets.ISO_8859_1.name());
        apply(latin1.file("\u00c0\u00ae\u00c0\u00ae/outside/secret", "a").file("\u00e0\u0080\u00ae\u00e0\u0080\u00ae/x",
                "b").plain(), "sha256:overlong");

        try (Stream<Path> walk = Files.walk(root)) {
            List<String> names = walk.map(p -> root.relativize(p).toString()).toList();
            assertThat(names).noneMatch(n -> n.startsWith("..") || n.contains("/.."));
            assertThat(names).hasSizeGreaterThan(2);
        }
    }

    @Test
    void doubledSlashesDotsAndBackslashesStayInside() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("etc//motd", "m").file("a/./b/./c/.", "c").file("x\\..\\..\\y", "y")
                .file("///abs//name", "n").dir("d/./", 0755).plain(), "sha256:slashes");

        assertThat(root.resolve("etc/motd")).hasContent("m");
        assertThat(root.resolve("a/b/c")).hasContent("c");
        assertThat(root.resolve("x\\..\\..\\y")).hasContent("y");
        assertThat(root.resolve("abs/name")).hasContent("n");
        assertThat(root.resolve("d")).isDirectory();
    }

    // ---- declared sizes ----

    @Test
    void declaredSizesThatDisagreeWithTheDataAreRefused() throws IOException {
        ImageException longer = refusal(truncatedAfterHeader(), "sha256:longer");
        ImageException negative = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("size", "-1")).file("a", "").plain(),
                "sha256:negative");
        ImageException huge = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("size", Long.toString(1L << 62))).file("a", "").plain(),
                "sha256:huge");

        assertThat(longer.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(longer.getMessage()).contains("not a readable tar stream");
        assertThat(negative.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(huge.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(huge.getMessage()).contains("past the cap");
    }

    /** Times a filesystem cannot hold are clamped by it or refused as unreadable, never an unchecked exception. */
    @Test
    void extremeTimesAreAppliedOrRefusedAsUnreadable() throws IOException {
        for (String mtime : List.of("-99999999999", "99999999999999", "1e30", "99999999999999999999", "nan")) {
            IOException failure = catchThrowableOfType(IOException.class, () -> apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name())
                    .pax(Map.of("mtime", mtime)).file("t", "t").pax(Map.of("mtime", mtime)).dir("d/", 0755).plain(),
                    "sha256:mtime"));
            if (failure != null) {
                assertThat(failure).as(mtime).isInstanceOf(ImageException.class);
                assertThat(((ImageException) failure).failure()).isEqualTo(Failure.HOSTILE_LAYER);
            } else {
                assertThat(root.resolve("t")).as(mtime).hasContent("t");
            }
        }
        unpacker.finish();
    }

    /** A file that says 1 MiB but whose tar ends after 1 KiB of it. */
    private static byte[] truncatedAfterHeader() {
        byte[] whole = CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("a", "x".repeat(1 << 20)).plain();
        return Arrays.copyOf(whole, 2048);
    }

    @Test
    void duplicateEntriesOfOneNameTheLastWins() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file("a", "1").file("a", "2").dir("a/", 0500).file("a/in", "i").file("a", "3")
                .dir("d/", 0500).file("d", "file").dir("d/", 0711).plain(), "sha256:dups");
        unpacker.finish();

        assertThat(root.resolve("a")).hasContent("3");
        assertThat(mode(root.resolve("d"))).isEqualTo(0711);
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

    // ---- sparse entries ----

    /** Holes are zeros the unpacker writes: a few KiB of sparse headers must not become GiBs past the ratio cap. */
    @Test
    void aSparseFileIsJudgedByTheBytesItWritesNotTheBytesItCarries() throws IOException {
        int real = 256 << 20;
        ImageException e = refusal(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(Map.of("GNU.sparse.size", Integer.toString(real),
                "GNU.sparse.numblocks", "1", "GNU.sparse.map", (real - 1) + ",1")).file("sparse", "x").gzip(),
                "sha256:sparse");

        assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(e.getMessage()).contains("sha256:sparse", "decompression bomb");
        assertThat(Files.size(root.resolve("sparse"))).isLessThan(4L << 20);
    }

    /**
     * A sparse header on a symlink or a skipped type: its holes (up to 2 GiB an entry, the most the tar reader takes)
     * used to be read through as zeros: some 40 ms of CPU for 2 KiB of layer, hours for a layer of a million such
     * entries, all within the ratio cap. The holes count as decompressed bytes now.
     */
    @Test
    void aSparseEntryOfAnotherTypeCannotSpinOnItsHoles() throws IOException {
        long real = Integer.MAX_VALUE;
        byte[] map = ("1\n" + (real - 1) + "\n1\n").getBytes(StandardCharsets.US_ASCII);
        byte[] data = Arrays.copyOf(map, 513);
        data[512] = 'x';
        byte[] types = {TarConstants.LF_SYMLINK, TarConstants.LF_FIFO, TarConstants.LF_CHR};
        CraftedLayer layer = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        for (int i = 0; i < 30; i++) {
            TarArchiveEntry e = new TarArchiveEntry("s" + i, types[i % types.length], true);
            e.setLinkName("target");
            layer.pax(Map.of("GNU.sparse.major", "1", "GNU.sparse.minor", "0", "GNU.sparse.realsize",
                    Long.toString(real))).entry(e, data);
        }
        byte[] blob = layer.gzip();

        ImageException refused = catchThrowableOfType(ImageException.class, () -> apply(blob, "sha256:spin"));

        assertThat(refused).isNotNull();
        assertThat(refused.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(refused.getMessage()).contains("sha256:spin", "'s0'", "decompression bomb");
    }

    /**
     * The tar reader reads a sparse entry's chunks by recursing once a chunk: a map of 40000 one-byte chunks read
     * into a 64 KiB buffer used to end in a StackOverflowError, an Error out of the unpacker instead of a result.
     */
    @Test
    void aSparseMapOfManyTinyChunksDoesNotOverflowTheStack() throws IOException {
        int chunks = 40_000;
        StringBuilder map = new StringBuilder();
        for (int i = 0; i < chunks; i++) {
            map.append(i == 0 ? "" : ",").append(2 * i + 1).append(",1");
        }
        byte[] data = "x".repeat(chunks).getBytes(StandardCharsets.US_ASCII);
        TarArchiveEntry link = new TarArchiveEntry("link", TarConstants.LF_SYMLINK, true);
        link.setLinkName("sparse");
        Map<String, String> sparse = Map.of("GNU.sparse.size", Integer.toString(2 * chunks), "GNU.sparse.numblocks",
                Integer.toString(chunks), "GNU.sparse.map", map.toString());
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).pax(sparse).entry(new TarArchiveEntry("sparse", TarConstants.LF_NORMAL, true), data)
                .pax(sparse).entry(link, data).gzip(), "sha256:chunks");

        byte[] content = Files.readAllBytes(root.resolve("sparse"));
        assertThat(content).hasSize(2 * chunks);
        for (int i = 0; i < content.length; i++) {
            assertThat(content[i]).as("byte " + i).isEqualTo(i % 2 == 0 ? (byte) 0 : (byte) 'x');
        }
        assertThat(Files.readSymbolicLink(root.resolve("link"))).hasToString("sparse");
    }

    /**
     * The tar reader follows a chain of PAX headers by recursing once a header: the header budget allows some 2000 of
     * them before one entry, which fits a 1 MiB stack with little to spare (a thread with less, or deeper in a server's
     * calls, overflowed). An overflow there is a refusal of the layer, never an Error out of the unpacker. Whether a
     * 256 KiB stack overflows depends on how the JIT has compiled the reader by then, so either outcome is right; an
     * Error is not.
     */
    @Test
    void aChainOfPaxHeadersDeeperThanTheStackIsRefused() throws Exception {
        CraftedLayer layer = CraftedLayer.rawNames(StandardCharsets.UTF_8.name());
        for (int i = 0; i < 2070; i++) {
            layer.pax(Map.of());
        }
        byte[] blob = layer.file("f", "f").plain();
        Object[] outcome = new Object[1];
        Thread small = Thread.ofPlatform().stackSize(256 << 10).start(() -> {
            try {
                apply(blob, "sha256:chain");
                outcome[0] = "applied";
            } catch (Throwable t) {
                outcome[0] = t;
            }
        });
        small.join();

        if (outcome[0] instanceof String applied) {
            assertThat(applied).isEqualTo("applied"); // the chain fitted this stack
            return;
        }
        assertThat(outcome[0]).as("an overflow is a refusal, never an Error").isInstanceOf(ImageException.class);
        assertThat(((ImageException) outcome[0]).failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(((ImageException) outcome[0]).getMessage()).contains("sha256:chain", "nest");
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

    // ---- the store's trees: deep, unreadable ----

    /** A tree whose absolute paths pass PATH_MAX (4096): java.nio cannot name its deepest directories. */
    @Test
    void aTreeDeeperThanPathMaxIsDeleted() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(deepName(), "deep").plain(), "sha256:deep");
        unpacker.finish();
        assertThat(root.toAbsolutePath().toString().length() + deepName().length()).isGreaterThan(4096);

        StoreFiles.deleteTree(root);

        assertThat(Files.exists(root, NOFOLLOW)).isFalse();
    }

    /**
     * Removing or pruning a directory chain as deep as the kernel lets a name be (2044 levels) used to recurse once a
     * level and end in a StackOverflowError: an Error out of the unpacker, not a refusal.
     */
    @Test
    void aWhiteoutOrOpaqueMarkerOverAChainAsDeepAsPathMaxWorks() throws IOException {
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(deepName(), "deep").file("b", "b").plain(), "sha256:deep");
        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(".wh.a", "").plain(), "sha256:whiteout");
        assertThat(names(root)).containsExactly("b");

        apply(CraftedLayer.rawNames(StandardCharsets.UTF_8.name()).file(deepName().replace('a', 'c'), "deep").file(".wh..wh..opq", "").plain(), "sha256:opq");

        assertThat(names(root)).containsExactly("c");
        StoreFiles.deleteTree(root);
    }

    /**
     * A refused layer that first made a tree past PATH_MAX: its staging directory used to stay (deleteTree failed),
     * and every later {@link ImageStore#open} then failed on it. The store must stay usable.
     */
    @Test
    void aRefusedDeepLayerLeavesTheStoreOpenable() throws IOException {
        ImageStore store = ImageStore.open(base.resolve("store"));
        byte[] hostile = new CraftedLayer().file(deepName(), "deep").file("../escape", "x").plain();

        assertThatThrownBy(() -> StoreFixtures.commit(store, "deep:1", "deep", hostile))
                .isInstanceOf(ImageException.class)
                .satisfies(e -> assertThat(((ImageException) e).failure()).isEqualTo(Failure.HOSTILE_LAYER));

        assertThat(StoreFixtures.entries(store.dir().resolve("staging"))).isEmpty();
        ImageStore.open(base.resolve("store"));
        Image image = StoreFixtures.commit(store, "deep:2", "deep2", new CraftedLayer().file(deepName(), "d")
                .plain());
        store.remove("deep:2");
        assertThat(store.prune().roots()).isEqualTo(1);
        assertThat(image.rootfs()).doesNotExist();
    }

    /** "a/" repeated to 4089 bytes: under the unpacker's 4096-byte name cap and the kernel's PATH_MAX below a root. */
    private static String deepName() {
        return "a/".repeat(2044) + "f";
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

    private ImageException refusal(byte[] blob, String digest) {
        ImageException e = catchThrowableOfType(ImageException.class, () -> apply(blob, digest));
        assertThat(e).as("layer " + digest + " is refused").isNotNull();
        return e;
    }

    private static void add(TarArchiveOutputStream tar, String name, byte[] data) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name, true);
        e.setSize(data.length);
        tar.putArchiveEntry(e);
        tar.write(data);
        tar.closeArchiveEntry();
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
