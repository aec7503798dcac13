package dev.crucible.image;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;

/**
 * Applies an image's layers, lowest first, onto one root directory, treating every layer as hostile input.
 * SKELETON: the rules and their implementation come with issue 13.
 */
public final class LayerUnpacker {
    /**
     * Caps over the whole image (all layers together).
     *
     * @param maxBytes uncompressed bytes of regular files
     * @param maxEntries tar entries
     * @param maxPathLength bytes of one entry's name (and of a link target)
     * @param maxRatio uncompressed bytes per compressed byte read (a decompression bomb is past it)
     */
    public record Caps(long maxBytes, long maxEntries, int maxPathLength, int maxRatio) {
        public static Caps defaults() {
            return new Caps(16L << 30, 2_000_000, 4096, 200);
        }
    }

    private LayerUnpacker() {}

    /** An unpacker onto {@code root}, an empty directory (created if missing) that only this process writes. */
    public static LayerUnpacker into(Path root, Caps caps) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /** Applies one layer blob (gzip, zstd or plain tar, told by its first bytes); {@code digest} names it in errors. */
    public void apply(InputStream blob, String digest) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /** Ends unpacking: creates the mount points a sandbox needs in the read-only root. */
    public void finish() throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }
}
