package dev.crucible.image.layer;

import static dev.crucible.image.layer.Sentinels.mode;
import static dev.crucible.image.layer.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;

/**
 * A review of how {@link LayerUnpacker} reads a tar as an attacker would write one, beyond {@link LayerUnpackerTest}:
 * PAX, global and sparse headers, odd encodings and names, declared sizes and times that disagree with the data. Every
 * test keeps a sentinel tree beside the root ({@code outside/}) and checks after it ran that nothing there changed.
 */
class LayerUnpackerReviewTest extends UnpackBesideSentinels {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid,ctime";

    LayerUnpackerReviewTest() {
        super(SNAPSHOT);
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
