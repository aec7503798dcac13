package dev.crucible.session.process;

import dev.crucible.sandbox.OutputListener;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A foreground command's output: the first {@code cap} bytes of each stream, whether more came, and the kept bytes
 * passed on to a listener as they come (a streaming caller). Thread-safe.
 */
final class CappedOutput {
    private final int cap;
    private final OutputListener listener;
    private final ByteArrayOutputStream[] kept = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
    private final boolean[] cut = new boolean[2];

    CappedOutput(int cap, OutputListener listener) {
        this.cap = cap;
        this.listener = listener;
    }

    void take(boolean stderr, ByteBuffer data) {
        int stream = stderr ? 1 : 0;
        byte[] chunk;
        synchronized (this) {
            int n = Math.min(cap - kept[stream].size(), data.remaining());
            chunk = new byte[Math.max(0, n)];
            data.get(chunk);
            kept[stream].writeBytes(chunk);
            cut[stream] |= data.hasRemaining();
        }
        if (chunk.length > 0) {
            listener.chunk(stderr, chunk, chunk.length);
        }
    }

    synchronized String text(boolean stderr) {
        return kept[stderr ? 1 : 0].toString(StandardCharsets.UTF_8);
    }

    synchronized boolean cut(boolean stderr) {
        return cut[stderr ? 1 : 0];
    }
}
