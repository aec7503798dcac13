package dev.crucible.image.archive;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.store.BlobWriter;
import dev.crucible.image.store.ImageStore;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;

/**
 * One pass over an image archive (a tar, gzip-compressed or not), whose entries come in any order: blobs go straight
 * into the store ({@code blobs/sha256/<hex>} verified against their name, {@code *.tar} layers hashed as they are
 * copied), the small JSON files stay in memory, links are remembered. Entry names are only keys here, never paths.
 */
final class ArchiveScan {
    private static final long MAX_DOCUMENTS = 64L << 20;
    private static final int MAX_ENTRIES = 1_000_000;
    private static final int MAX_LINK_HOPS = 16;

    private final Map<String, byte[]> documents = new HashMap<>();
    private final Map<String, String> blobs = new HashMap<>();
    private final Map<String, String> links = new HashMap<>();
    private final ImageStore store;
    private final String source;
    private long documentBytes;

    private ArchiveScan(ImageStore store, String source) {
        this.store = store;
        this.source = source;
    }

    /** Reads {@code file} into {@code store}; UNSUPPORTED if it is not a tar (or a gzip of one). */
    static ArchiveScan read(Path file, ImageStore store) throws IOException {
        ArchiveScan scan = new ArchiveScan(store, file.toString());
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            InputStream in = isGzip(raw) ? new BufferedInputStream(new GzipCompressorInputStream(raw, true), 1 << 16) : raw;
            if (!isTar(in)) {
                throw ImageImporter.notAnArchive(file);
            }
            scan.readEntries(new TarArchiveInputStream(in));
        }
        return scan;
    }

    /** Whether the archive has this file (after links). */
    boolean has(String name) {
        String entry = resolve(name);
        return documents.containsKey(entry) || blobs.containsKey(entry);
    }

    /** The bytes of a small file (a JSON document kept in memory, or a stored blob), or null if the archive lacks it. */
    byte[] bytes(String name) throws IOException {
        String entry = resolve(name);
        if (documents.containsKey(entry)) {
            return documents.get(entry);
        }
        String digest = blobs.get(entry);
        return digest == null ? null : ImageFormats.readDocument(store.blob(digest), name);
    }

    /** The digest of the blob this entry was stored as, or null. */
    String digest(String name) {
        return blobs.get(resolve(name));
    }

    private void readEntries(TarArchiveInputStream tar) throws IOException {
        int count = 0;
        for (TarArchiveEntry entry; (entry = tar.getNextEntry()) != null; ) {
            if (++count > MAX_ENTRIES) {
                throw new ImageException(ImageException.Failure.TOO_LARGE, source + " has more than " + MAX_ENTRIES
                        + " entries: not an image archive");
            }
            String name = normalize(entry.getName());
            if (entry.isSymbolicLink()) {
                String target = entry.getLinkName();
                int slash = name.lastIndexOf('/');
                links.put(name, normalize(target.startsWith("/") || slash < 0 ? target
                        : name.substring(0, slash + 1) + target));
            } else if (entry.isLink()) {
                links.put(name, normalize(entry.getLinkName()));
            } else if (entry.isFile()) {
                readFile(tar, name, entry.getSize());
            }
        }
    }

    private void readFile(InputStream in, String name, long size) throws IOException {
        String hex = name.startsWith("blobs/sha256/") ? name.substring("blobs/sha256/".length()) : null;
        if (hex != null && Digests.HEX.matcher(hex).matches()) {
            blobs.put(name, storeNamed("sha256:" + hex, in));
        } else if (name.endsWith(".json") || name.equals("oci-layout") || name.equals("repositories")) {
            documentBytes += size;
            if (size > ImageFormats.MAX_DOCUMENT || documentBytes > MAX_DOCUMENTS) {
                throw new ImageException(ImageException.Failure.TOO_LARGE, name + " in " + source + " is larger than"
                        + " image metadata can be (" + (ImageFormats.MAX_DOCUMENT >> 20) + " MiB)");
            }
            documents.put(name, in.readNBytes((int) size));
        } else if (name.endsWith(".tar")) {
            blobs.put(name, store.putBlob(in)); // a docker save layer: named by an id, not its digest
        }
    }

    /** Stores an entry the archive names by its digest, verified; one already stored is skipped. */
    private String storeNamed(String digest, InputStream in) throws IOException {
        if (!store.hasBlob(digest)) {
            try (BlobWriter writer = store.openBlob(digest)) {
                writer.discard();
                in.transferTo(writer.stream());
                writer.commit();
            } catch (ImageException e) {
                throw new ImageException(e.failure(), source + ": " + e.getMessage(), e);
            }
        }
        return digest;
    }

    private String resolve(String name) {
        String entry = normalize(name);
        for (int hops = 0; links.containsKey(entry) && hops < MAX_LINK_HOPS; hops++) {
            entry = links.get(entry);
        }
        return entry;
    }

    /** {@code ./a/../b/} → {@code b}: archive names as one key each. */
    static String normalize(String name) {
        Deque<String> parts = new ArrayDeque<>();
        for (String part : name.split("/")) {
            if (part.equals("..")) {
                parts.pollLast();
            } else if (!part.isEmpty() && !part.equals(".")) {
                parts.addLast(part);
            }
        }
        return String.join("/", parts);
    }

    private static boolean isGzip(InputStream in) throws IOException {
        in.mark(2);
        byte[] magic = in.readNBytes(2);
        in.reset();
        return magic.length == 2 && (magic[0] & 0xff) == 0x1f && (magic[1] & 0xff) == 0x8b;
    }

    /** A POSIX or GNU tar header: "ustar" at offset 257 of the first block. */
    private static boolean isTar(InputStream in) throws IOException {
        in.mark(512);
        byte[] header = in.readNBytes(512);
        in.reset();
        return header.length == 512 && new String(header, 257, 5, StandardCharsets.US_ASCII).equals("ustar");
    }
}
