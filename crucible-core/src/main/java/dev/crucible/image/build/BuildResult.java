package dev.crucible.image.build;

import dev.crucible.image.spec.Image;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.Verdict;
import java.nio.charset.StandardCharsets;

/** How an image build ended: the new image, or the step that failed (then nothing was committed). Immutable. */
public sealed interface BuildResult {

    /**
     * The image was committed.
     *
     * @param image the new image, as the store now names it
     * @param layer the digest of the new layer's blob (gzip)
     * @param diffId the digest of the new layer's uncompressed tar
     * @param layerBytes the blob's size
     * @param entries tar entries in the layer, whiteouts included
     * @param whiteouts names of the base image the steps deleted
     */
    record Built(Image image, String layer, String diffId, long layerBytes, long entries, long whiteouts)
            implements BuildResult {}

    /**
     * A step did not end with exit code 0 (or broke a limit); the steps after it did not run.
     *
     * @param step its number, from 1
     * @param command the step's shell command
     * @param result what the step's sandbox reported (its verdict, exit code and kept output)
     */
    record StepFailed(int step, String command, SandboxResult result) implements BuildResult {
        private static final int TAIL_CHARS = 2000;

        public Verdict verdict() {
            return result.verdict();
        }

        public int exitCode() {
            return result.exitCode();
        }

        /** The end of the step's stderr (its stdout when stderr is empty), at most 2000 characters. */
        public String outputTail() {
            byte[] bytes = result.stderr().length > 0 ? result.stderr() : result.stdout();
            String text = new String(bytes, StandardCharsets.UTF_8).strip();
            return text.length() <= TAIL_CHARS ? text : "…" + text.substring(text.length() - TAIL_CHARS);
        }
    }
}
