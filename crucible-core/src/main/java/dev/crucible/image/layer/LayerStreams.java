package dev.crucible.image.layer;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageException.Failure;
import io.airlift.compress.v3.zstd.ZstdInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.security.MessageDigest;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * The decompressed bytes of one layer blob, counted against the blob's compressed bytes: the compression is told by
 * the first bytes (gzip, zstd, else plain tar; bzip2 and xz are refused), a counter beneath the decompressor counts
 * what it pulls from the blob, and a counter above it refuses a decompression bomb (past 1 MiB, more than
 * {@code maxRatio} decompressed bytes per compressed byte) or tar headers past a budget the moment either is passed,
 * before the bytes that pass it reach the tar reader. Bytes the tar reader makes up rather than reads (a sparse
 * entry's holes) count as decompressed ({@link #expanded}). A refusal is thrown from {@code read} and kept
 * ({@link #tripped()}), so the caller can tell it from the tar reader's own errors that wrap it. The decompressed
 * bytes are hashed as they pass: {@link #diffId()} reads the stream to its end and is the layer's {@code diff_id}.
 */
final class LayerStreams extends InputStream {
    /** Decompressed bytes read before the ratio is judged: headers and small files compress unevenly. */
    static final long RATIO_FLOOR = 1L << 20;
    /**
     * Compressed bytes the gzip reader pulls at once: what it holds unread counts as read, so a larger buffer would
     * let a bomb run on (to {@code maxRatio} times the buffer) before its ratio shows.
     */
    private static final int GZIP_BUFFER = 8192;
    private static final byte[] GZIP = {0x1f, (byte) 0x8b};
    private static final byte[] ZSTD = {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd};
    private static final byte[] BZIP2 = {'B', 'Z', 'h'};
    private static final byte[] XZ = {(byte) 0xfd, '7', 'z', 'X', 'Z', 0};

    private final Counted compressed;
    private final InputStream decompressed;
    private final String digest;
    private final int maxRatio;
    private final MessageDigest diff = Digests.sha256();
    private long count;
    private long limit = Long.MAX_VALUE;
    private long budget;
    private String reading = "";
    private ImageException tripped;

    private LayerStreams(Counted compressed, InputStream decompressed, String digest, int maxRatio) {
        this.compressed = compressed;
        this.decompressed = decompressed;
        this.digest = digest;
        this.maxRatio = maxRatio;
    }

    /**
     * The decompressed stream of {@code blob}.
     *
     * @throws ImageException UNSUPPORTED for bzip2 or xz, HOSTILE_LAYER for a gzip or zstd stream whose header does
     *     not read
     */
    static LayerStreams open(InputStream blob, String digest, int maxRatio) throws IOException {
        Counted counted = new Counted(blob);
        PushbackInputStream head = new PushbackInputStream(counted, XZ.length);
        byte[] magic = head.readNBytes(XZ.length);
        head.unread(magic);
        InputStream decompressed;
        try {
            decompressed = decompressor(head, magic, digest);
        } catch (ZipException e) {
            throw new ImageException(Failure.HOSTILE_LAYER, "layer " + digest + " starts like gzip but its header does"
                    + " not read: " + e.getMessage(), e);
        }
        return new LayerStreams(counted, decompressed, digest, maxRatio);
    }

    private static InputStream decompressor(InputStream in, byte[] magic, String digest) throws IOException {
        if (startsWith(magic, GZIP)) {
            return new GZIPInputStream(in, GZIP_BUFFER);
        }
        if (startsWith(magic, ZSTD)) {
            return new ZstdInputStream(in);
        }
        if (startsWith(magic, BZIP2) || startsWith(magic, XZ)) {
            throw new ImageException(Failure.UNSUPPORTED, "layer " + digest + " is compressed with "
                    + (startsWith(magic, XZ) ? "xz" : "bzip2") + "; Crucible reads gzip, zstd and plain tar layers");
        }
        return in;
    }

    private static boolean startsWith(byte[] data, byte[] prefix) {
        if (data.length < prefix.length) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (data[i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    /** Names the entry being read, for the messages of a refusal. */
    void reading(String entry) {
        this.reading = entry;
    }

    /** Allows at most {@code budget} more bytes until {@link #unbounded()}: tar headers are read under a budget. */
    void window(long budget) {
        this.budget = budget;
        limit = count + budget;
    }

    void unbounded() {
        limit = Long.MAX_VALUE;
    }

    /** The refusal a read threw, if any: the tar reader may have wrapped it in an exception of its own. */
    ImageException tripped() {
        return tripped;
    }

    long decompressedBytes() {
        return count;
    }

    long compressedBytes() {
        return compressed.count;
    }

    /**
     * Counts {@code bytes} the tar reader gave without reading them from this stream (a sparse entry's holes: zeros
     * it makes up) as decompressed, so the ratio cap judges a sparse entry by what it writes, not by what it carries:
     * a few KiB of sparse headers could otherwise stand for GiBs of zeros written or read through.
     */
    void expanded(long bytes) throws ImageException {
        if (bytes > 0) {
            count += bytes;
            check();
        }
    }

    /**
     * Reads what is left after the tar stream's end (its end-of-archive records and padding belong to the layer's
     * uncompressed bytes) under the same caps, and returns the digest of all the decompressed bytes: the layer's
     * {@code diff_id}, which an image config names.
     */
    String diffId() throws IOException {
        transferTo(OutputStream.nullOutputStream());
        return Digests.of(diff);
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (tripped != null) {
            throw tripped;
        }
        int n;
        try {
            n = decompressed.read(b, off, len);
        } catch (RuntimeException e) { // the zstd reader throws MalformedInputException, unchecked
            throw new IOException("the compressed stream does not decode: " + e, e);
        }
        if (n > 0) {
            diff.update(b, off, n);
            count += n;
            check();
        }
        return n;
    }

    private void check() throws ImageException {
        if (count > limit) {
            throw trip("", "the tar headers after " + (reading.isEmpty() ? "the start" : "entry '" + reading + "'")
                    + " take more than " + budget + " bytes (an oversized PAX or long-name header)");
        }
        if (count > RATIO_FLOOR && count > (double) maxRatio * compressed.count) {
            throw trip(", entry '" + reading + "'", "decompression bomb: " + count + " bytes from " + compressed.count
                    + " compressed bytes, more than the cap of " + maxRatio + " per compressed byte");
        }
    }

    private ImageException trip(String where, String rule) {
        tripped = new ImageException(Failure.TOO_LARGE, "layer " + digest + where + " refused: " + rule);
        return tripped;
    }

    /** Ends the decompressor (a gzip inflater holds native memory); the blob itself is the caller's to close. */
    @Override
    public void close() throws IOException {
        decompressed.close();
    }

    /** Counts the bytes the decompressor pulls from the blob (skips read through, so they count); never closes it. */
    private static final class Counted extends InputStream {
        private final InputStream in;
        private long count;

        Counted(InputStream in) {
            this.in = in;
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                count++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                count += n;
            }
            return n;
        }

        @Override
        public int available() throws IOException {
            return in.available();
        }

        @Override
        public void close() {
            // the blob is the caller's
        }
    }
}
