package dev.crucible.image.build;

import dev.crucible.image.layer.RootDiff;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;

/**
 * A session's files made an image (issue 30, commit): the session's workspace as one layer over the image it runs in,
 * its entries under {@code /workspace} (whiteouts for what the image had there and the workspace lost), committed under
 * a tag as an image build's layer is ({@link BuildCommit}). Nothing else of the sandbox is read: not what Crucible
 * mounts there (its {@code /etc} files, tokens, proxy settings), not {@code /tmp}. The workspace is read as hostile
 * input, by descriptors ({@link RootDiff}), so a session may go on running while it is committed. A session made in
 * the new image starts with that workspace. Thread-safe.
 */
public final class WorkspaceCommit {
    private WorkspaceCommit() {}

    /**
     * Commits {@code workspace} over {@code base} as {@code tag}.
     *
     * @param scratch a directory of the server's own for the layer while it is written (removed after)
     * @param what a word on what was committed, kept in the image's history (the session's id)
     * @throws ImageException INVALID_REFERENCE for a tag with a digest, UNSUPPORTED for a name a layer cannot carry,
     *     and the failures of {@link ImageStore#commit}
     */
    public static BuildResult.Built commit(ImageStore store, Image base, Path workspace, ImageRef tag, Path scratch,
            String what) throws IOException {
        if (tag.digest() != null) {
            throw new ImageException(ImageException.Failure.INVALID_REFERENCE, "the tag '" + tag.canonical()
                    + "' has a digest; a committed image is named by name[:tag], and gets its digest when committed");
        }
        try (Closeable lease = store.lease(base)) {
            Path file = Files.createTempFile(scratch, "commit-", ".tar.gz");
            try {
                Files.delete(file); // the layer writer makes it
                RootDiff.Layer layer = RootDiff.writeUnder(base.rootfs().resolve("workspace"), workspace, "workspace",
                        file);
                long bytes = Files.size(file);
                String blob;
                try (InputStream in = Files.newInputStream(file)) {
                    blob = store.putBlob(in);
                }
                Image image = BuildCommit.commit(store, base, tag, new BuildCommit.History("crucible session commit: "
                        + what, "the session's /workspace"), blob, bytes, layer.diffId(), Instant.now());
                return new BuildResult.Built(image, blob, layer.diffId(), bytes, layer.entries(), layer.whiteouts());
            } finally {
                Files.deleteIfExists(file);
            }
        }
    }
}
