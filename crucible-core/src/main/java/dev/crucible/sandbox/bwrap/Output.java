package dev.crucible.sandbox.bwrap;

import dev.crucible.sandbox.OutputListener;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Reads one output stream of a run with a cap: the first bytes up to the cap are kept, then only the last
 * {@link #TAIL_BYTES} (a ring). The first byte past the cap calls {@code onOverflow} once, which kills the run.
 * One reader thread drains it; {@link #configure} may come from another, while it reads.
 */
final class Output {
    static final int TAIL_BYTES = 4096;

    private volatile int cap;
    private volatile OutputListener listener = OutputListener.NONE;
    private final boolean isStderr;
    private final Runnable onOverflow;
    private final ByteArrayOutputStream head = new ByteArrayOutputStream();
    private final byte[] tail = new byte[TAIL_BYTES];
    private long tailWritten;
    private long total;
    private boolean overflowed;

    Output(int cap, boolean isStderr, Runnable onOverflow) {
        this.cap = cap;
        this.isStderr = isStderr;
        this.onOverflow = onOverflow;
    }

    /**
     * Sets the cap and the listener (a sandbox gets them when its run is claimed). What was already kept is given to
     * the listener first, in order: a cold run's program starts at its launch and may print before its run is
     * claimed, and a streaming client must still see its first bytes (ImageBuildTest missed a step's output under a
     * CPU hog).
     */
    synchronized void configure(int newCap, OutputListener newListener) {
        this.cap = newCap;
        this.listener = newListener == null ? OutputListener.NONE : newListener;
        if (head.size() > 0 && listener != OutputListener.NONE) {
            byte[] early = head.toByteArray();
            listener.chunk(isStderr, early, (int) Math.min(early.length, Math.max(0, newCap)));
        }
    }

    /** Reads {@code in} to its end. Returns quietly when the stream breaks (the run was killed). */
    void drain(InputStream in) {
        byte[] buf = new byte[16 * 1024];
        try (in) {
            int n;
            while ((n = in.read(buf)) > 0) {
                accept(buf, n);
            }
        } catch (IOException e) {
            // the pipe closes under us when the run is killed; what was read is kept
        }
    }

    private synchronized void accept(byte[] buf, int n) {
        int keep = (int) Math.max(0, Math.min(n, cap - total));
        head.write(buf, 0, keep);
        if (keep > 0) {
            listener.chunk(isStderr, buf, keep);
        }
        for (int i = keep; i < n; i++) {
            tail[(int) (tailWritten++ % TAIL_BYTES)] = buf[i];
        }
        total += n;
        if (total > cap && !overflowed) {
            overflowed = true;
            onOverflow.run();
        }
    }

    boolean truncated() {
        return overflowed;
    }

    long totalBytes() {
        return total;
    }

    /** The kept bytes: the head, and when the stream was truncated a marker line and the tail. */
    byte[] bytes() {
        if (!overflowed) {
            return head.toByteArray();
        }
        int tailLength = (int) Math.min(tailWritten, TAIL_BYTES);
        long omitted = total - head.size() - tailLength;
        ByteArrayOutputStream out = new ByteArrayOutputStream(head.size() + tailLength + 64);
        out.writeBytes(head.toByteArray());
        out.writeBytes(("\n[crucible: output cap of " + cap + " bytes reached; " + omitted + " bytes omitted]\n")
                .getBytes(StandardCharsets.UTF_8));
        long start = tailWritten - tailLength;
        for (long i = start; i < tailWritten; i++) {
            out.write(tail[(int) (i % TAIL_BYTES)]);
        }
        return out.toByteArray();
    }
}
