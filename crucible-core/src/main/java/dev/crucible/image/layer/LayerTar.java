package dev.crucible.image.layer;

import dev.crucible.image.spec.Digests;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * One layer being written to a file: a POSIX tar (UTF-8 names, PAX headers where ustar is too small), every entry
 * owned by 0:0 with whole-second times, compressed with gzip (no time in its header), hashed as it is written so that
 * its {@code diff_id} is known at the end. The same entries in the same order give the same bytes. Names are relative
 * to the root. Not thread-safe.
 */
final class LayerTar implements Closeable {
    private static final int TYPE_FILE = 0100000;
    private static final int TYPE_DIRECTORY = 0040000;
    private static final int TYPE_SYMLINK = 0120000;

    private final MessageDigest hash = Digests.sha256();
    private final OutputStream file;
    private final GZIPOutputStream gzip;
    private final TarArchiveOutputStream tar;
    private final byte[] buffer = new byte[1 << 16];
    private long entries;

    /** Creates {@code path} (which must not exist) and writes the layer there. */
    LayerTar(Path path) throws IOException {
        this.file = Files.newOutputStream(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        this.gzip = new GZIPOutputStream(new BufferedOutputStream(file, 1 << 16), 1 << 16);
        this.tar = new TarArchiveOutputStream(new DigestOutputStream(gzip, hash), StandardCharsets.UTF_8.name());
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        tar.setAddPaxHeadersForNonAsciiNames(true);
    }

    void directory(String path, int permissions, long mtimeSeconds) throws IOException {
        TarArchiveEntry entry = entry(path + "/", TarConstants.LF_DIR, TYPE_DIRECTORY | permissions, mtimeSeconds);
        tar.putArchiveEntry(entry);
        tar.closeArchiveEntry();
    }

    /**
     * A regular file of exactly {@code size} bytes read from {@code body}.
     *
     * @throws IOException when {@code body} ends before {@code size} bytes
     */
    void file(String path, int permissions, long mtimeSeconds, long size, InputStream body) throws IOException {
        TarArchiveEntry entry = entry(path, TarConstants.LF_NORMAL, TYPE_FILE | permissions, mtimeSeconds);
        entry.setSize(size);
        tar.putArchiveEntry(entry);
        for (long left = size; left > 0; ) {
            int n = body.read(buffer, 0, (int) Math.min(buffer.length, left));
            if (n < 0) {
                throw new IOException(path + " ended " + left + " bytes before its size while it was read");
            }
            tar.write(buffer, 0, n);
            left -= n;
        }
        tar.closeArchiveEntry();
    }

    void symlink(String path, String target, long mtimeSeconds) throws IOException {
        TarArchiveEntry entry = entry(path, TarConstants.LF_SYMLINK, TYPE_SYMLINK | 0777, mtimeSeconds);
        entry.setLinkName(target);
        tar.putArchiveEntry(entry);
        tar.closeArchiveEntry();
    }

    /** The whiteout of {@code path} ({@code dir/.wh.name}): the layer deletes what lower layers have there. */
    void whiteout(String path) throws IOException {
        int slash = path.lastIndexOf('/');
        String name = path.substring(0, slash + 1) + TarLayer.WHITEOUT + path.substring(slash + 1);
        TarArchiveEntry entry = entry(name, TarConstants.LF_NORMAL, TYPE_FILE | 0644, 0);
        tar.putArchiveEntry(entry);
        tar.closeArchiveEntry();
    }

    private TarArchiveEntry entry(String name, byte type, int mode, long mtimeSeconds) {
        TarArchiveEntry entry = new TarArchiveEntry(name, type);
        entry.setMode(mode);
        entry.setUserId(0);
        entry.setGroupId(0);
        entry.setUserName("root");
        entry.setGroupName("root");
        entry.setModTime(FileTime.from(Math.max(0, mtimeSeconds), TimeUnit.SECONDS));
        entries++;
        return entry;
    }

    /** Entries written so far. */
    long entries() {
        return entries;
    }

    /** Ends the tar and the gzip stream; returns the diff_id ({@code sha256:} of the uncompressed tar). */
    String finish() throws IOException {
        tar.finish();
        tar.flush();
        gzip.finish();
        gzip.flush();
        return Digests.of(hash);
    }

    /** Closes the file (and frees the compressor); after a failure what was written is only to be deleted. */
    @Override
    public void close() throws IOException {
        try {
            gzip.close();
        } finally {
            file.close();
        }
    }
}
