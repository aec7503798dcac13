package dev.crucible.image.store;

import dev.crucible.image.spec.ImageException;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;

/** A blob being written; the bytes are verified against the digest before it becomes visible. */
public interface BlobWriter extends Closeable {
    /** Bytes already stored by an earlier, interrupted attempt. */
    long offset();

    /** Appends after {@link #offset()}; closing the stream only flushes it. */
    OutputStream stream();

    /**
     * Verifies the whole blob against its digest and makes it visible. On a mismatch the partial file is deleted
     * and {@link ImageException.Failure#DIGEST_MISMATCH} thrown.
     */
    Path commit() throws IOException;

    /** Throws the partial bytes away (a restart from zero); writing goes on from offset 0. */
    void discard() throws IOException;

    /** Ends this attempt; uncommitted bytes stay for the next {@link ImageStore#openBlob} to resume. */
    @Override
    void close() throws IOException;
}
