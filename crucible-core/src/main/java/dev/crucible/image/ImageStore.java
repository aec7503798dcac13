package dev.crucible.image;

import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The content-addressed image store under a data dir: verified blobs shared by every image, one unpacked root per
 * image id, and the names that point at them. SKELETON: the implementation comes with issue 13.
 */
public final class ImageStore {
    private final Path dir;

    private ImageStore(Path dir) {
        this.dir = dir;
    }

    /** Opens (creating) the store at {@code dir}, usually {@code <data dir>/images}; cleans what a killed process left. */
    public static ImageStore open(Path dir) throws IOException {
        return new ImageStore(dir);
    }

    public Path dir() {
        return dir;
    }

    /** The image a reference (short or canonical name, {@code name@digest}, manifest digest, or an id prefix) names. */
    public Optional<Image> find(String reference) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /** Every named image, sorted by name. */
    public List<Image> list() throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /** Whether a verified blob with this digest is stored. */
    public boolean hasBlob(String digest) {
        throw new UnsupportedOperationException("issue 13");
    }

    /** The file of a verified blob (read-only). */
    public Path blob(String digest) {
        throw new UnsupportedOperationException("issue 13");
    }

    /**
     * A writer for the blob {@code digest}, resuming a partial download a killed pull left: {@link BlobWriter#offset()}
     * bytes are already there.
     */
    public BlobWriter openBlob(String digest) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /**
     * Makes an image visible under {@code name} once its manifest, config and every layer blob are stored: unpacks the
     * layers into a staging root (unless an image with the same id has one), renames it into place, then writes the
     * name. Nothing is visible if this throws.
     */
    public Image commit(ImageRef name, String manifestDigest, byte[] manifest, byte[] config) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /** Holds {@code image}'s root against prune while a server uses it; close to let go. */
    public Closeable lease(Image image) throws IOException {
        throw new UnsupportedOperationException("issue 13");
    }

    /** A blob being written; the bytes are verified against the digest before it becomes visible. */
    public interface BlobWriter extends Closeable {
        /** Bytes already stored by an earlier, interrupted attempt. */
        long offset();

        /** Appends after {@link #offset()}. */
        OutputStream stream();

        /**
         * Verifies the whole blob against its digest and makes it visible. On a mismatch the partial file is deleted
         * and {@link ImageException.Failure#DIGEST_MISMATCH} thrown.
         */
        Path commit() throws IOException;

        /** Throws the partial bytes away (a restart from zero). */
        void discard() throws IOException;
    }
}
