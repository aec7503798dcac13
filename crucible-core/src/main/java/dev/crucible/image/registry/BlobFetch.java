package dev.crucible.image.registry;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.BlobWriter;
import dev.crucible.image.store.ImageStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpTimeoutException;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Downloads one blob (a config or a layer) into the store through its {@link BlobWriter}: resumes a partial
 * download with {@code Range: bytes=OFFSET-}, starts over when the registry answers the whole blob instead, never
 * writes past the size the manifest declares, and leaves what arrived for the next pull when the connection breaks.
 * The store verifies the digest on commit.
 */
final class BlobFetch {
    private static final int BUFFER = 1 << 16;
    private static final Pattern CONTENT_RANGE = Pattern.compile("bytes ([0-9]{1,18})-.*");

    private final RegistryClient client;
    private final ImageStore store;
    private final ImageRef ref;
    private final ImagePuller.Progress progress;

    BlobFetch(RegistryClient client, ImageStore store, ImageRef ref, ImagePuller.Progress progress) {
        this.client = client;
        this.store = store;
        this.ref = ref;
        this.progress = progress;
    }

    /**
     * Stores {@code blob} unless the store has it; returns whether it was fetched.
     *
     * @throws ImageException DIGEST_MISMATCH (other bytes, or more than declared), NOT_FOUND, UNREACHABLE (what
     *     arrived is kept for the next pull), UNAUTHORIZED
     */
    boolean fetch(ImageFormats.Descriptor blob) throws IOException {
        String digest = blob.digest();
        if (store.hasBlob(digest)) {
            progress.blobDone(digest, blob.size(), false);
            return false;
        }
        try (BlobWriter writer = store.openBlob(digest)) {
            long done = writer.offset();
            if (done > blob.size()) {
                writer.discard();
                done = 0;
            }
            progress.blobStarted(digest, blob.size(), done);
            if (done < blob.size()) {
                download(writer, blob, done);
            }
            writer.commit();
        }
        progress.blobDone(digest, blob.size(), true);
        return true;
    }

    private void download(BlobWriter writer, ImageFormats.Descriptor blob, long offset) throws IOException {
        long done = offset;
        for (int attempt = 0; ; attempt++) {
            Map<String, String> range = done > 0 ? Map.of("Range", "bytes=" + done + "-") : Map.of();
            String missing = "blob " + blob.digest() + " of " + ref + " is not in the registry (pull again; if it"
                    + " persists the image is broken there)";
            try (RegistryClient.Response response = client.get("blobs/" + blob.digest(), range, missing)) {
                int status = response.status();
                if (status == 200 && done > 0) {
                    writer.discard(); // the registry does not do ranges: start over from its whole answer
                    done = 0;
                } else if (status != 200 && (status != 206 || rangeStart(response) != done)) {
                    if (done == 0 || attempt > 0) {
                        throw new ImageException(ImageException.Failure.UNREACHABLE, "registry " + ref.registry()
                                + " answered HTTP " + status + " for blob " + blob.digest() + " at byte " + done);
                    }
                    writer.discard(); // a range it cannot serve: ask for the whole blob
                    done = 0;
                    continue;
                }
                copy(response, writer, blob, done);
                return;
            }
        }
    }

    private static long rangeStart(RegistryClient.Response response) {
        Matcher m = CONTENT_RANGE.matcher(response.headers().firstValue("Content-Range").orElse(""));
        return m.matches() ? Long.parseLong(m.group(1)) : -1;
    }

    /**
     * Copies the body after {@code done} bytes, up to the blob's size and not a byte further; a Content-Length that
     * does not reach exactly the declared size is refused before anything is written.
     */
    private void copy(RegistryClient.Response response, BlobWriter writer, ImageFormats.Descriptor blob,
            long done) throws IOException {
        long size = blob.size();
        long length = response.headers().firstValueAsLong("Content-Length").orElse(-1);
        if (length >= 0 && length != size - done) {
            throw wrongLength(blob, done + length);
        }
        InputStream in = response.body();
        OutputStream out = writer.stream();
        byte[] buffer = new byte[BUFFER];
        while (done < size) {
            int n = read(in, buffer, (int) Math.min(buffer.length, size - done), blob, done);
            if (n < 0) {
                throw new ImageException(ImageException.Failure.UNREACHABLE, "registry " + ref.registry()
                        + " unreachable: the connection ended after " + done + " of " + size + " bytes of blob "
                        + blob.digest() + "; pull again to resume");
            }
            out.write(buffer, 0, n);
            done += n;
            progress.blobProgress(blob.digest(), done, size);
        }
        if (read(in, buffer, 1, blob, done) >= 0) {
            writer.discard(); // nothing of a misbehaving answer is kept
            throw wrongLength(blob, -1);
        }
    }

    private int read(InputStream in, byte[] buffer, int length, ImageFormats.Descriptor blob, long done)
            throws IOException {
        try {
            return in.read(buffer, 0, length);
        } catch (IOException e) {
            String why = e instanceof HttpTimeoutException && e.getMessage() != null ? e.getMessage()
                    : "the connection broke (" + (e.getMessage() != null ? e.getMessage() : e.toString()) + ")";
            throw new ImageException(ImageException.Failure.UNREACHABLE, "registry " + ref.registry() + " unreachable: "
                    + why + " after " + done + " of " + blob.size() + " bytes of blob " + blob.digest()
                    + ", which are kept; pull again to resume", e);
        }
    }

    private ImageException wrongLength(ImageFormats.Descriptor blob, long sent) {
        return new ImageException(ImageException.Failure.DIGEST_MISMATCH, "registry " + ref.registry() + " sends "
                + (sent >= 0 ? sent + " bytes" : "more") + " for blob " + blob.digest() + ", which the manifest of "
                + ref + " says is " + blob.size() + " bytes: refused; pull again, and if it persists the image is"
                + " broken there");
    }
}
