package dev.crucible.image.layer;

import io.airlift.compress.v3.zstd.ZstdOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.archivers.zip.ZipEncodingHelper;

/**
 * A layer tar crafted in memory for the unpacker's tests: entries in the order added (PAX and global headers as raw
 * records among them), then plain, gzip or zstd bytes. {@code new CraftedLayer()} writes names as a modern tar does
 * (PAX for long and non-ASCII names and for big numbers); {@link #rawNames(String)} writes them as bytes in an
 * encoding, as an old or hostile writer does.
 */
public final class CraftedLayer {
    private static final long FIXED_MTIME_MS = 1_600_000_000_000L;

    private final String encoding;
    private final boolean modern;
    private final List<Object> pieces = new ArrayList<>(); // Entry or byte[] (a raw record)
    private int headers;
    private int uid = -1;
    private int gid = -1;

    private record Entry(TarArchiveEntry header, byte[] data) {}

    public CraftedLayer() {
        this(StandardCharsets.UTF_8.name(), true);
    }

    private CraftedLayer(String encoding, boolean modern) {
        this.encoding = encoding;
        this.modern = modern;
    }

    /** "a/" repeated to 4089 bytes: under the unpacker's 4096-byte name cap and the kernel's PATH_MAX below a root. */
    public static String deepName() {
        return "a/".repeat(2044) + "f";
    }

    /** Names written as bytes in {@code encoding}, with no PAX header for a non-ASCII one. */
    public static CraftedLayer rawNames(String encoding) {
        return new CraftedLayer(encoding, false);
    }

    /** A tar writer as a modern tar is (PAX for long and non-ASCII names and big numbers), onto {@code to}. */
    public static TarArchiveOutputStream stream(OutputStream to) {
        TarArchiveOutputStream tar = new TarArchiveOutputStream(to);
        modernize(tar);
        return tar;
    }

    private static void modernize(TarArchiveOutputStream tar) {
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        tar.setAddPaxHeadersForNonAsciiNames(true);
    }

    public CraftedLayer dir(String name) {
        return dir(name, 0755);
    }

    public CraftedLayer dir(String name, int mode) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_DIR, true);
        e.setMode(mode);
        return entry(e, new byte[0]);
    }

    public CraftedLayer file(String name, String content) {
        return file(name, content, 0644);
    }

    public CraftedLayer file(String name, String content, int mode) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_NORMAL, true);
        e.setMode(mode);
        return entry(e, content.getBytes(StandardCharsets.UTF_8));
    }

    public CraftedLayer symlink(String name, String target) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK, true);
        e.setLinkName(target);
        return entry(e, new byte[0]);
    }

    public CraftedLayer hardlink(String name, String target) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_LINK, true);
        e.setLinkName(target);
        return entry(e, new byte[0]);
    }

    /** A device node, FIFO or other special entry of tar type {@code type}. */
    public CraftedLayer special(String name, byte type) {
        TarArchiveEntry e = new TarArchiveEntry(name, type, true);
        e.setDevMajor(8);
        e.setDevMinor(1);
        return entry(e, new byte[0]);
    }

    /** A local PAX header ('x') for the next entry, with exactly these records. */
    public CraftedLayer pax(Map<String, String> records) {
        return entry(new TarArchiveEntry("PaxHeaders/" + headers++, TarConstants.LF_PAX_EXTENDED_HEADER_LC, true),
                records(records));
    }

    /**
     * A global PAX header ('g') with exactly these records, written as raw records: the tar writer would make one of
     * its own from an entry's extra headers only.
     */
    public CraftedLayer global(Map<String, String> records) {
        byte[] data = records(records);
        TarArchiveEntry e = new TarArchiveEntry("GlobalHead/" + headers++, TarConstants.LF_PAX_GLOBAL_EXTENDED_HEADER,
                true);
        e.setSize(data.length);
        byte[] header = new byte[512];
        try {
            e.writeEntryHeader(header, ZipEncodingHelper.getZipEncoding(StandardCharsets.UTF_8), false);
        } catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        raw.writeBytes(header);
        raw.writeBytes(Arrays.copyOf(data, (data.length + 511) / 512 * 512));
        pieces.add(raw.toByteArray());
        return this;
    }

    private static byte[] records(Map<String, String> records) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        records.forEach((key, value) -> {
            byte[] body = (" " + key + "=" + value + "\n").getBytes(StandardCharsets.UTF_8);
            int length = body.length + 1;
            while (Integer.toString(length).length() + body.length != length) {
                length++;
            }
            out.writeBytes(Integer.toString(length).getBytes(StandardCharsets.US_ASCII));
            out.writeBytes(body);
        });
        return out.toByteArray();
    }

    /** Adds {@code e} with {@code data}; every entry has one fixed mtime, so a layer built twice has one digest. */
    public CraftedLayer entry(TarArchiveEntry e, byte[] data) {
        e.setSize(data.length);
        e.setModTime(FIXED_MTIME_MS);
        pieces.add(new Entry(e, data));
        return this;
    }

    /** Every entry claims this owner (the unpacker must ignore it). */
    public CraftedLayer owned(int uid, int gid) {
        this.uid = uid;
        this.gid = gid;
        return this;
    }

    /** The tar: one record a block, so raw records stand in order among the entries. */
    public byte[] plain() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes, 512, encoding)) {
            if (modern) {
                modernize(tar);
            } else {
                tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            }
            for (Object piece : pieces) {
                if (piece instanceof Entry(TarArchiveEntry e, byte[] data)) {
                    if (uid >= 0) {
                        e.setUserId(uid);
                        e.setGroupId(gid);
                    }
                    tar.putArchiveEntry(e);
                    tar.write(data);
                    tar.closeArchiveEntry();
                } else {
                    tar.flush();
                    bytes.writeBytes((byte[]) piece);
                }
            }
            tar.finish();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return bytes.toByteArray();
    }

    /** Writes the plain tar to {@code file}. */
    public Path writeTo(Path file) throws IOException {
        return Files.write(file, plain());
    }

    public byte[] gzip() throws IOException {
        ByteArrayOutputStream compressed = new ByteArrayOutputStream();
        try (OutputStream out = new GZIPOutputStream(compressed)) {
            out.write(plain());
        }
        return compressed.toByteArray();
    }

    public byte[] zstd() throws IOException {
        ByteArrayOutputStream compressed = new ByteArrayOutputStream();
        try (OutputStream out = new ZstdOutputStream(compressed)) {
            out.write(plain());
        }
        return compressed.toByteArray();
    }
}
