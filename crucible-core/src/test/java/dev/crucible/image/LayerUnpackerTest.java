package dev.crucible.image;

import dev.crucible.image.ImageException.Failure;
import io.airlift.compress.v3.zstd.ZstdOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.compressors.bzip2.BZip2CompressorOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import static dev.crucible.image.Sentinels.inode;
import static dev.crucible.image.Sentinels.mode;
import static dev.crucible.image.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link LayerUnpacker} against crafted hostile layers, on real files: every test has a sentinel tree beside the
 * root ({@code outside/}) and checks after it ran that nothing there changed (contents, modes, link counts, names)
 * and that nothing appeared beside the root.
 */
class LayerUnpackerTest {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    @TempDir
    Path base;

    @TempDir
    Path scratch;

    Path root;
    Path outside;
    /** {@link #outside} as a name inside a layer: the host's absolute path of the sentinel tree. */
    String outsideAbsolute;
    Map<String, String> outsideBefore;
    LayerUnpacker unpacker;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid";

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
        try (Stream<Path> beside = Files.list(base)) {
            assertThat(beside.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("root", "outside");
        }
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
        if (!"UTF-8".equals(System.getProperty("sun.jnu.encoding"))) {
            System.out.println("LayerUnpackerTest: paths are not UTF-8 in this JVM's locale; names not compared");
            return;
        }
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

    // ---- skipped types, modes, ownership, xattrs ----

    @Test
    void devicesFifosSocketsAndUnknownTypesAreSkipped() throws IOException {
        TarArchiveEntry socket = new TarArchiveEntry("run/sock");
        socket.setMode(0140755);
        apply(new CraftedLayer().special("dev/null", TarConstants.LF_CHR).special("dev/sda", TarConstants.LF_BLK)
                .special("run/fifo", TarConstants.LF_FIFO).entry(socket, new byte[0]).special("weird", (byte) 'Z')
                .file("ok", "ok").plain(), "sha256:special");

        assertThat(unpacker.skipped()).isEqualTo(5);
        assertThat(unpacker.entries()).isEqualTo(6);
        assertThat(names(root)).containsExactly("ok");
    }

    @Test
    void onlyMode0755IsKeptAndEverythingBelongsToTheUnpacker() throws IOException {
        int me = (int) Files.getAttribute(base, "unix:uid");
        CraftedLayer layer = new CraftedLayer().file("suid", "x", 04755).file("sgid", "x", 02750).file("world", "x", 0666)
                .file("none", "x", 0).dir("sticky/", 01777).dir("ro/", 0500).file("ro/inner", "i", 0644);
        apply(layer.owned(4242, 4343).gzip(), "sha256:modes");
        assertThat(mode(root.resolve("ro"))).isEqualTo(0700);

        apply(new CraftedLayer().file("ro/later", "l").gzip(), "sha256:later");
        unpacker.finish();

        assertThat(mode(root.resolve("suid"))).isEqualTo(0755);
        assertThat(mode(root.resolve("sgid"))).isEqualTo(0750);
        assertThat(mode(root.resolve("world"))).isEqualTo(0644);
        assertThat(mode(root.resolve("none"))).isEqualTo(0);
        assertThat(mode(root.resolve("sticky"))).isEqualTo(0755);
        assertThat(mode(root.resolve("ro"))).isEqualTo(0500);
        assertThat(root.resolve("ro/later")).hasContent("l");
        for (String name : List.of("suid", "sticky", "ro/inner")) {
            assertThat(Files.getAttribute(root.resolve(name), "unix:uid")).isEqualTo(me);
            assertThat(Files.getAttribute(root.resolve(name), "unix:gid")).isNotEqualTo(4343);
        }
    }

    @Test
    void noExtendedAttributeIsEverSet() throws IOException, InterruptedException {
        TarArchiveEntry ping = new TarArchiveEntry("usr/bin/ping");
        ping.addPaxHeader("SCHILY.xattr.security.capability", "\u0001\u0000\u0000\u0002\u0000\u0020\u0000\u0000");
        ping.addPaxHeader("SCHILY.xattr.user.planted", "yes");
        ping.addPaxHeader("LIBARCHIVE.xattr.user.other", "eWVz");
        ping.setMode(04755);
        apply(new CraftedLayer().entry(ping, "PING".getBytes(StandardCharsets.UTF_8)).gzip(), "sha256:xattr");

        Path file = root.resolve("usr/bin/ping");
        assertThat(file).hasContent("PING");
        assertThat(mode(file)).isEqualTo(0755);
        if (!Files.isExecutable(Path.of("/usr/bin/getfattr"))) {
            System.out.println("LayerUnpackerTest: /usr/bin/getfattr is missing (package attr); xattrs not checked");
            return;
        }
        Process getfattr = new ProcessBuilder("/usr/bin/getfattr", "-d", "-m", "-", file.toString())
                .redirectErrorStream(true).start();
        String attributes = new String(getfattr.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(getfattr.waitFor()).isZero();
        assertThat(attributes).doesNotContain("security.capability", "user.planted", "user.other");
    }

    // ---- caps ----

    @Test
    void theEntryCapCountsEveryLayer() throws IOException {
        unpacker = LayerUnpacker.into(root, new LayerUnpacker.Caps(1 << 20, 5, 4096, 200));
        apply(new CraftedLayer().file("a", "a").file("b", "b").file("c", "c").plain(), "sha256:three");

        ImageException e = refusal(new CraftedLayer().file("d", "d").file("e", "e").file("f", "f").plain(), "sha256:more");

        assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(e.getMessage()).contains("sha256:more", "'f'", "more than 5 entries");
        assertThat(Files.exists(root.resolve("f"))).isFalse();
    }

    @Test
    void theByteCapCountsEveryLayerAndStopsBeforeWriting() throws IOException {
        unpacker = LayerUnpacker.into(root, new LayerUnpacker.Caps(1000, 100, 4096, 200));
        apply(new CraftedLayer().file("a", "x".repeat(600)).plain(), "sha256:first");

        ImageException e = refusal(new CraftedLayer().file("b", "y".repeat(600)).plain(), "sha256:second");

        assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(e.getMessage()).contains("sha256:second", "'b'", "cap of 1000 bytes");
        assertThat(Files.exists(root.resolve("b"))).isFalse();
        assertThat(unpacker.bytes()).isEqualTo(600);
    }

    @Test
    void thePathLengthCapRefusesLongNamesAndLinkTargets() throws IOException {
        unpacker = LayerUnpacker.into(root, new LayerUnpacker.Caps(1 << 20, 100, 64, 200));
        String longName = "d/" + "n".repeat(63);

        ImageException name = refusal(new CraftedLayer().file(longName, "x").plain(), "sha256:name");
        ImageException symlink = refusal(new CraftedLayer().symlink("s", "t".repeat(65)).plain(), "sha256:sym");
        ImageException hardlink = refusal(new CraftedLayer().file("f", "f").hardlink("h", "./".repeat(40) + "f").plain(),
                "sha256:hard");
        unpacker = LayerUnpacker.into(root, LayerUnpacker.Caps.defaults());
        ImageException component = refusal(new CraftedLayer().file("c/" + "n".repeat(256), "x").plain(), "sha256:component");

        assertThat(name.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(name.getMessage()).contains("name is 65 bytes long", "cap of 64");
        assertThat(symlink.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(symlink.getMessage()).contains("symlink target");
        assertThat(hardlink.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(hardlink.getMessage()).contains("hard link target");
        assertThat(component.failure()).isEqualTo(Failure.HOSTILE_LAYER);
        assertThat(component.getMessage()).contains("longer than 255 bytes");
    }

    @Test
    void aGzipBombIsRefusedQuickly() throws IOException {
        refusesBomb(GZIPOutputStream::new, "sha256:gzipbomb");
    }

    @Test
    void aZstdBombIsRefusedQuickly() throws IOException {
        refusesBomb(ZstdOutputStream::new, "sha256:zstdbomb");
    }

    /** 512 MiB of zeros, compressed as they are streamed: nothing holds the bomb, and the unpacker must not read it. */
    private void refusesBomb(Compressor compressor, String digest) throws IOException {
        long size = 512L << 20;
        try (InputStream bomb = streamed(compressor, size)) {
            long start = System.nanoTime();
            ImageException e = catchThrowableOfType(ImageException.class, () -> unpacker.apply(bomb, digest));
            long millis = (System.nanoTime() - start) / 1_000_000;

            assertThat(e).isNotNull();
            assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
            assertThat(e.getMessage()).contains(digest, "'zeros'", "decompression bomb");
            assertThat(millis).as("milliseconds to refuse a 512 MiB bomb").isLessThan(3000);
            assertThat(unpacker.bytes()).isLessThan(4L << 20);
            assertThat(Files.size(root.resolve("zeros"))).isLessThan(4L << 20);
        }
    }

    @Test
    void anOversizedTarHeaderIsRefusedBeforeItIsHeld() throws IOException {
        TarArchiveEntry big = new TarArchiveEntry("big");
        big.addPaxHeader("comment", "z".repeat(4 << 20));

        ImageException e = refusal(new CraftedLayer().file("first", "1").entry(big, new byte[0]).plain(), "sha256:header");

        assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
        assertThat(e.getMessage()).contains("sha256:header", "tar headers", "'first'");
    }

    // ---- compression and format ----

    @Test
    void compressionIsToldByItsMagicBytes() throws IOException {
        CraftedLayer layer = new CraftedLayer().file("f", "content");
        apply(layer.plain(), "sha256:plain");
        apply(new CraftedLayer().file("g", "gz").gzip(), "sha256:gzip");
        apply(new CraftedLayer().file("z", "zst").zstd(), "sha256:zstd");

        ByteArrayOutputStream bzip2 = new ByteArrayOutputStream();
        try (OutputStream out = new BZip2CompressorOutputStream(bzip2)) {
            out.write(layer.plain());
        }
        byte[] xz = {(byte) 0xfd, '7', 'z', 'X', 'Z', 0, 0, 4, (byte) 0xe6, (byte) 0xd6, (byte) 0xb4, 0x46};
        ImageException bz = refusal(bzip2.toByteArray(), "sha256:bzip2");
        ImageException x = refusal(xz, "sha256:xz");

        assertThat(root.resolve("f")).hasContent("content");
        assertThat(root.resolve("g")).hasContent("gz");
        assertThat(root.resolve("z")).hasContent("zst");
        assertThat(bz.failure()).isEqualTo(Failure.UNSUPPORTED);
        assertThat(bz.getMessage()).contains("sha256:bzip2", "bzip2");
        assertThat(x.failure()).isEqualTo(Failure.UNSUPPORTED);
        assertThat(x.getMessage()).contains("xz");
    }

    @Test
    void aTruncatedCorruptOrNonTarLayerIsRefused() throws IOException {
        byte[] whole = new CraftedLayer().file("a", "x".repeat(100_000)).file("b", "b").gzip();

        byte[] zstd = new CraftedLayer().file("a", "x".repeat(100_000)).file("b", "b").zstd();
        Arrays.fill(zstd, 6, zstd.length, (byte) 0x5a);
        byte[] garbage = "this is no tar archive, just text that goes on".repeat(20).getBytes(StandardCharsets.UTF_8);

        ImageException cut = refusal(Arrays.copyOf(whole, whole.length / 2), "sha256:cut");
        ImageException corrupt = refusal(zstd, "sha256:corrupt");
        ImageException text = refusal(garbage, "sha256:text");

        for (ImageException e : List.of(cut, corrupt, text)) {
            assertThat(e.failure()).isEqualTo(Failure.HOSTILE_LAYER);
            assertThat(e.getMessage()).contains("not a readable tar stream");
        }
        assertThat(cut.getMessage()).contains("sha256:cut", "'a'");
    }

    // ---- real shapes ----

    @Test
    void aRealImageShapeUnpacks() throws IOException {
        String longDir = "usr/lib/python3/" + "x".repeat(60);
        String longFile = longDir + "/" + "y".repeat(80) + ".py";
        String longTarget = "../" + "z".repeat(120) + "/target";
        apply(new CraftedLayer().dir("./").dir("usr/").dir("usr/bin/").dir("usr/lib/").symlink("bin", "usr/bin")
                .symlink("lib", "usr/lib").file("usr/bin/busybox", "BUSYBOX", 0755).hardlink("./usr/bin/ls",
                        "usr/bin/busybox").hardlink("usr/bin/cat", "/usr/bin/busybox").symlink("usr/bin/sh",
                        "/bin/busybox").dir(longDir + "/").file(longFile, "long").symlink("usr/lib/longlink",
                        longTarget).file("opt/thing/inner", "i").file("srv/data", "file-data").gzip(), "sha256:base");
        assertThat(Files.getAttribute(root.resolve("usr/bin/busybox"), "unix:nlink")).isEqualTo(3);
        assertThat(inode(root.resolve("usr/bin/ls"))).isEqualTo(inode(root.resolve("usr/bin/busybox")));

        apply(new CraftedLayer().file("opt/thing", "now a file").dir("srv/data/").file("srv/data/inner", "inner")
                .file("usr/bin/ls", "LS").zstd(), "sha256:top");
        unpacker.finish();

        assertThat(Files.readSymbolicLink(root.resolve("bin"))).hasToString("usr/bin");
        assertThat(Files.readSymbolicLink(root.resolve("usr/bin/sh"))).hasToString("/bin/busybox");
        assertThat(Files.readSymbolicLink(root.resolve("usr/lib/longlink"))).hasToString(longTarget);
        assertThat(root.resolve("bin/busybox")).hasContent("BUSYBOX");
        assertThat(root.resolve("usr/bin/cat")).hasContent("BUSYBOX");
        assertThat(Files.getAttribute(root.resolve("usr/bin/busybox"), "unix:nlink")).isEqualTo(2);
        assertThat(root.resolve("usr/bin/ls")).hasContent("LS");
        assertThat(root.resolve(longFile)).hasContent("long");
        assertThat(root.resolve("opt/thing")).hasContent("now a file");
        assertThat(root.resolve("srv/data/inner")).hasContent("inner");
        assertThat(mode(root.resolve("usr/bin/busybox"))).isEqualTo(0755);
    }

    @Test
    void finishMakesTheMountPointsReplacingWhatIsNotOne() throws IOException {
        apply(new CraftedLayer().dir("var/tmp/").file("var/tmp/kept", "k").symlink("tmp", "/var/tmp")
                .symlink("proc", outsideAbsolute).file("dev", "not a dir").symlink("etc/passwd", outsideAbsolute
                        + "/secret").file("etc/hosts", "127.0.0.1 localhost\n").dir("etc/group/").gzip(), "sha256:m");

        unpacker.finish();

        for (String dir : List.of("proc", "dev", "tmp", "workspace", "build", "etc")) {
            assertThat(root.resolve(dir)).isDirectory();
            assertThat(Files.isSymbolicLink(root.resolve(dir))).isFalse();
            assertThat(mode(root.resolve(dir))).isEqualTo(0755);
        }
        assertThat(names(root.resolve("tmp"))).isEmpty();
        assertThat(root.resolve("var/tmp/kept")).hasContent("k");
        for (String file : List.of("passwd", "group")) {
            assertThat(Files.isRegularFile(root.resolve("etc").resolve(file), NOFOLLOW)).isTrue();
            assertThat(root.resolve("etc").resolve(file)).isEmptyFile();
            assertThat(mode(root.resolve("etc").resolve(file))).isEqualTo(0644);
        }
        assertThat(Files.readString(root.resolve("etc/hosts"))).isEqualTo("127.0.0.1 localhost\n");
        assertThat(mode(root)).isEqualTo(0755);
        assertThatThrownBy(() -> unpacker.apply(new ByteArrayInputStream(new CraftedLayer().plain()), "sha256:late"))
                .isInstanceOf(IllegalStateException.class);
    }

    /** A real Debian tree (Python packages of the host, a few thousand entries) through a gzip layer. */
    @Test
    void aRealDebianFileTreeUnpacks() throws IOException {
        Path packages = Path.of("/usr/lib/python3/dist-packages");
        List<String> subsets = List.of("pip", "pygments", "matplotlib/backends");
        assumeTrue(subsets.stream().allMatch(s -> Files.isDirectory(packages.resolve(s))),
                "the host has no " + packages + " with " + subsets);
        Path layer = scratch.resolve("debian.tar.gz");
        String prefix = "usr/lib/python3/dist-packages/";
        Map<String, String> expected = new TreeMap<>();
        try (OutputStream file = Files.newOutputStream(layer); GZIPOutputStream gzip = new GZIPOutputStream(file);
                TarArchiveOutputStream tar = CraftedLayer.stream(gzip)) {
            for (String subset : subsets) {
                try (Stream<Path> walk = Files.walk(packages.resolve(subset))) {
                    for (Path p : walk.toList()) {
                        String name = prefix + packages.relativize(p);
                        addHostPath(tar, p, name);
                        expected.put(name, describe(p));
                    }
                }
            }
        }

        try (InputStream in = Files.newInputStream(layer)) {
            unpacker.apply(in, "sha256:debian");
        }
        unpacker.finish();

        Map<String, String> unpacked = new TreeMap<>();
        for (String subset : subsets) {
            try (Stream<Path> walk = Files.walk(root.resolve(prefix + subset))) {
                for (Path p : walk.toList()) {
                    unpacked.put(root.relativize(p).toString(), describe(p));
                }
            }
        }
        assertThat(unpacked).hasSize(expected.size()).isEqualTo(expected);
        assertThat(Files.readAllBytes(root.resolve(prefix + "pip/__init__.py")))
                .isEqualTo(Files.readAllBytes(packages.resolve("pip/__init__.py")));
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

    /** Type, mode (as the unpacker keeps it), size and link target or content digest of one path. */
    private static String describe(Path p) throws IOException {
        if (Files.isSymbolicLink(p)) {
            return "link " + Files.readSymbolicLink(p);
        }
        String kind = Files.isDirectory(p, NOFOLLOW) ? "dir" : "file " + Files.size(p) + " "
                + Arrays.hashCode(Files.readAllBytes(p));
        return kind + " " + Integer.toOctalString(mode(p) & 0755);
    }

    @FunctionalInterface
    private interface Compressor {
        OutputStream wrap(OutputStream out) throws IOException;
    }

    /** A tar of one file of {@code size} zeros, compressed on a thread as the reader pulls it through a pipe. */
    private static InputStream streamed(Compressor compressor, long size) throws IOException {
        PipedInputStream in = new PipedInputStream(1 << 16);
        PipedOutputStream out = new PipedOutputStream(in);
        Thread.ofPlatform().daemon().name("bomb-writer").start(() -> {
            try (OutputStream compressed = compressor.wrap(out);
                    TarArchiveOutputStream tar = CraftedLayer.stream(compressed)) {
                TarArchiveEntry zeros = new TarArchiveEntry("zeros");
                zeros.setSize(size);
                tar.putArchiveEntry(zeros);
                byte[] chunk = new byte[1 << 16];
                for (long left = size; left > 0; left -= chunk.length) {
                    tar.write(chunk, 0, (int) Math.min(chunk.length, left));
                }
                tar.closeArchiveEntry();
            } catch (IOException expected) {
                // the reader stopped reading and closed the pipe
            }
        });
        return in;
    }

    /** Adds the host path {@code p} (directory, symlink or regular file) as {@code name}. */
    private static void addHostPath(TarArchiveOutputStream tar, Path p, String name) throws IOException {
        TarArchiveEntry e;
        if (Files.isSymbolicLink(p)) {
            e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK);
            e.setLinkName(Files.readSymbolicLink(p).toString());
        } else if (Files.isDirectory(p, NOFOLLOW)) {
            e = new TarArchiveEntry(name + "/", TarConstants.LF_DIR);
        } else {
            e = new TarArchiveEntry(name);
            e.setSize(Files.size(p));
        }
        e.setMode(mode(p));
        tar.putArchiveEntry(e);
        if (Files.isRegularFile(p, NOFOLLOW)) {
            Files.copy(p, tar);
        }
        tar.closeArchiveEntry();
    }
}
