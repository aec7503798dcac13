package dev.crucible.image.layer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
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
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.compressors.bzip2.BZip2CompressorOutputStream;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;

/**
 * {@link LayerUnpacker}'s caps (entries, bytes, name lengths, decompression bombs, header budgets) and its reading of
 * compressions and malformed layers, on real files beside a sentinel tree ({@code outside/}) that every test checks is
 * unchanged, with nothing new beside the root.
 */
class LayerUnpackerCapsTest extends UnpackBesideSentinels {
    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid";

    LayerUnpackerCapsTest() {
        super(SNAPSHOT, true);
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
            // a deadline, not a timing: reading the whole bomb through would take minutes on a loaded host
            ImageException e = Assertions.assertTimeoutPreemptively(Duration.ofSeconds(60),
                    () -> catchThrowableOfType(ImageException.class, () -> unpacker.apply(bomb, digest)));

            assertThat(e).isNotNull();
            assertThat(e.failure()).isEqualTo(Failure.TOO_LARGE);
            assertThat(e.getMessage()).contains(digest, "'zeros'", "decompression bomb");
            assertThat(unpacker.bytes()).as("bytes unpacked before the refusal").isLessThan(4L << 20);
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

    // ---- helpers ----

    private void apply(byte[] blob, String digest) throws IOException {
        unpacker.apply(new ByteArrayInputStream(blob), digest);
    }

    private ImageException refusal(byte[] blob, String digest) {
        ImageException e = catchThrowableOfType(ImageException.class, () -> apply(blob, digest));
        assertThat(e).as("layer " + digest + " is refused").isNotNull();
        return e;
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
}
