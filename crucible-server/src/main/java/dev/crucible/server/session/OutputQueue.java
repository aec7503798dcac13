package dev.crucible.server.session;

import dev.crucible.sandbox.OutputListener;
import dev.crucible.server.api.StreamWriter;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * A streamed command's output between the thread that produces it (the session's supervisor reader, which must never
 * wait for a client) and the request's thread that writes it out: bounded in bytes; past the bound a chunk is
 * skipped and counted, and the client is told ({@code dropped}). The command's result still carries its whole
 * capped output. Thread-safe: one producer per stream, one consumer.
 */
final class OutputQueue implements OutputListener {
    private record Chunk(boolean stderr, byte[] bytes) {}

    private final int maxBytes;
    private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
    private int bytes;
    private long skipped;
    private boolean closed;

    OutputQueue(int maxBytes) {
        this.maxBytes = maxBytes;
    }

    @Override
    public synchronized void chunk(boolean stderr, byte[] data, int length) {
        if (bytes + length > maxBytes) {
            skipped += length;
        } else {
            chunks.add(new Chunk(stderr, Arrays.copyOf(data, length)));
            bytes += length;
        }
        notifyAll();
    }

    /** No more will come. */
    synchronized void close() {
        closed = true;
        notifyAll();
    }

    /** Writes every chunk to {@code writer} as it comes, until the queue is closed and empty. */
    void drainTo(StreamWriter writer) throws InterruptedException {
        while (true) {
            Chunk next;
            long lost;
            synchronized (this) {
                while (chunks.isEmpty() && skipped == 0 && !closed) {
                    wait();
                }
                if (chunks.isEmpty() && skipped == 0) {
                    return;
                }
                lost = skipped;
                skipped = 0;
                next = chunks.poll();
                if (next != null) {
                    bytes -= next.bytes().length;
                }
            }
            if (lost > 0) {
                writer.dropped(lost);
            }
            if (next != null) {
                writer.chunk(next.stderr(), next.bytes(), next.bytes().length);
            }
        }
    }
}
