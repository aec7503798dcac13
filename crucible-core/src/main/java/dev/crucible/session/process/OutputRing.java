package dev.crucible.session.process;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A background process's output for late readers: its stdout and stderr interleaved as they came, the last
 * {@code capacity} bytes of them kept. Every byte has an offset, counted from the process's first and never reused, so
 * a reader resumes where it stopped and learns how many bytes it missed when the ring overwrote them. Grows as the
 * output comes (an idle process holds a few KiB) up to its capacity. Thread-safe: the supervisor's reader appends,
 * any number of readers wait for more.
 */
final class OutputRing {
    private static final int FIRST_SIZE = 4096;

    private final int capacity;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition more = lock.newCondition();
    private byte[] bytes;
    /** One bit per byte of {@link #bytes}: set for stderr. */
    private long[] stderr;
    /** The offset after the last byte appended: every byte ever appended, kept or not. */
    private long end;
    private boolean closed;

    OutputRing(int capacity) {
        if (capacity < 64 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("a ring's capacity is a power of two of at least 64, not " + capacity);
        }
        this.capacity = capacity;
        this.bytes = new byte[Math.min(FIRST_SIZE, capacity)];
        this.stderr = new long[bytes.length / 64];
    }

    /** Appends one chunk of a stream; the oldest bytes make room when the ring is full. */
    void append(boolean fromStderr, ByteBuffer data) {
        lock.lock();
        try {
            int n = data.remaining();
            grow(Math.min(capacity, (long) kept() + n));
            if (n > bytes.length) { // only its tail can be kept
                end += n - bytes.length;
                data.position(data.position() + n - bytes.length);
                n = bytes.length;
            }
            for (int i = 0; i < n; i++) {
                int at = (int) (end & (bytes.length - 1));
                bytes[at] = data.get();
                if (fromStderr) {
                    stderr[at >>> 6] |= 1L << at;
                } else {
                    stderr[at >>> 6] &= ~(1L << at);
                }
                end++;
            }
            more.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** No more output will come (the process ended): waiting readers return. */
    void close() {
        lock.lock();
        try {
            closed = true;
            more.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private int kept() {
        return (int) Math.min(end, bytes.length);
    }

    /** Makes the ring hold {@code wanted} bytes, by doubling, the kept bytes moved to their new places. */
    private void grow(long wanted) {
        if (wanted <= bytes.length || bytes.length == capacity) {
            return;
        }
        int size = bytes.length;
        while (size < wanted) {
            size *= 2;
        }
        byte[] grown = new byte[size];
        long[] grownTags = new long[size / 64];
        for (long offset = end - kept(); offset < end; offset++) {
            int from = (int) (offset & (bytes.length - 1));
            int to = (int) (offset & (size - 1));
            grown[to] = bytes[from];
            if ((stderr[from >>> 6] & (1L << from)) != 0) {
                grownTags[to >>> 6] |= 1L << to;
            }
        }
        bytes = grown;
        stderr = grownTags;
    }

    /**
     * What a reader gets from {@code from} on: at most {@code max} bytes, waiting up to {@code waitMs} for a first one
     * when there is none yet (0: not at all).
     */
    Read read(long from, int max, long waitMs) throws InterruptedException {
        lock.lock();
        try {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
            while (from >= end && !closed) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                more.awaitNanos(left);
            }
            long start = Math.max(Math.min(from, end), end - kept());
            long stop = Math.min(end, start + max);
            List<Chunk> chunks = new ArrayList<>();
            long offset = start;
            while (offset < stop) {
                boolean err = isStderr(offset);
                long run = offset;
                while (run < stop && isStderr(run) == err) {
                    run++;
                }
                byte[] chunk = new byte[(int) (run - offset)];
                for (int i = 0; i < chunk.length; i++) {
                    chunk[i] = bytes[(int) ((offset + i) & (bytes.length - 1))];
                }
                chunks.add(new Chunk(err, offset, chunk));
                offset = run;
            }
            return new Read(Math.max(0, start - Math.max(0, from)), chunks, stop, closed && stop == end);
        } finally {
            lock.unlock();
        }
    }

    private boolean isStderr(long offset) {
        int at = (int) (offset & (bytes.length - 1));
        return (stderr[at >>> 6] & (1L << at)) != 0;
    }

    /** Every byte the process wrote, kept or not. */
    long total() {
        lock.lock();
        try {
            return end;
        } finally {
            lock.unlock();
        }
    }

    /** The bytes written before the oldest one still kept. */
    long dropped() {
        lock.lock();
        try {
            return end - kept();
        } finally {
            lock.unlock();
        }
    }

    /** A run of one stream's bytes, starting at {@code offset}. */
    record Chunk(boolean stderr, long offset, byte[] bytes) {}

    /**
     * @param missed bytes between the offset asked for and the first one returned: overwritten before they were read
     * @param next the offset to read from next
     * @param ended no more will come: the process ended and everything was read
     */
    record Read(long missed, List<Chunk> chunks, long next, boolean ended) {}
}
