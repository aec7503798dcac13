package dev.crucible.cli.image;

import dev.crucible.image.registry.ImagePuller;
import java.io.PrintWriter;

/**
 * The progress of {@code crucible image pull} on stderr: on a terminal one line per blob, rewritten as bytes arrive
 * (at most ten times a second); otherwise (a log, CI) one line per finished blob. Called from the pulling threads.
 */
final class PullProgress implements ImagePuller.Progress {
    private static final long REDRAW_NANOS = 100_000_000L;

    private final PrintWriter err;
    private final boolean terminal;
    private long lastDraw;

    PullProgress(PrintWriter err, boolean terminal) {
        this.err = err;
        this.terminal = terminal;
    }

    @Override
    public synchronized void blobStarted(String digest, long size, long already) {
        if (terminal) {
            draw(digest, already, size, already > 0 ? "resuming" : "fetching");
        }
    }

    @Override
    public synchronized void blobProgress(String digest, long done, long size) {
        long now = System.nanoTime();
        if (terminal && now - lastDraw >= REDRAW_NANOS) {
            lastDraw = now;
            draw(digest, done, size, "fetching");
        }
    }

    @Override
    public synchronized void blobDone(String digest, long size, boolean fetched) {
        String line = ImageCli.shortHex(digest) + "  " + (fetched ? "fetched " : "already stored ") + ImageCli.size(size);
        err.print(terminal ? "\r\033[K" + line + "\n" : line + "\n");
        err.flush();
    }

    @Override
    public synchronized void unpacking(int layers) {
        err.println((terminal ? "\r\033[K" : "") + "unpacking " + layers + " layer" + (layers == 1 ? "" : "s"));
        err.flush();
    }

    private void draw(String digest, long done, long size, String verb) {
        String total = size > 0 ? " / " + ImageCli.size(size) : "";
        err.print("\r\033[K" + ImageCli.shortHex(digest) + "  " + verb + " " + ImageCli.size(done) + total);
        err.flush();
    }
}
