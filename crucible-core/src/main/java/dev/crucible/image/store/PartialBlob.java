package dev.crucible.image.store;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.HashSet;
import java.util.Set;

/**
 * A download into {@code partial/sha256-<hex>}: appends after what an interrupted attempt kept, then verifies the whole
 * file against its digest and renames it into {@code blobs/}. The hash runs as the bytes are written (what an earlier
 * attempt kept is hashed once, when the writer opens), so a verified blob is never read back. One writer per blob at a time: threads of this JVM wait
 * for the partial file to be free here, other processes on an exclusive lock of it, held through the channel that
 * writes it (the only channel this JVM has on the file, since closing any would drop the lock).
 */
final class PartialBlob implements BlobWriter {
    /** The partial files a writer of this JVM has open; guarded by itself. */
    private static final Set<Path> WRITING = new HashSet<>();
    private static final int BUFFER = 1 << 16;

    private final String digest;
    private final Path partial;
    private final Path blob;
    private final Path turn;
    private final FileChannel channel;
    private final ByteBuffer buffer = ByteBuffer.allocate(BUFFER);
    private final OutputStream stream = new Appender();
    /** The hash of every byte in the file so far, written or kept. */
    private final MessageDigest running = Digests.sha256();
    private long offset;
    private boolean closed;

    private PartialBlob(String digest, Path partial, Path blob, Path turn, FileChannel channel) throws IOException {
        this.digest = digest;
        this.partial = partial;
        this.blob = blob;
        this.turn = turn;
        this.channel = channel;
        this.offset = channel.size();
        hashKept(offset);
        channel.position(offset);
    }

    /** Opens the writer of {@code digest}; a blob already stored gets a writer that has nothing left to write. */
    static BlobWriter open(String digest, Path partial, Path blob) throws IOException {
        if (Files.exists(blob)) {
            return new Stored(blob);
        }
        Path turn = partial.toAbsolutePath();
        take(turn, digest);
        try {
            while (true) {
                FileChannel channel = FileChannel.open(partial, StandardOpenOption.CREATE, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                try {
                    channel.lock(); // another process writing this blob: wait for it to finish or fail
                    if (Files.exists(blob)) { // it finished: its file was renamed away under us
                        channel.close();
                        give(turn);
                        return new Stored(blob);
                    }
                    if (Files.exists(partial)) {
                        return new PartialBlob(digest, partial, blob, turn, channel);
                    }
                    channel.close(); // it failed and deleted the file we opened: start a new one
                } catch (IOException | RuntimeException e) {
                    channel.close();
                    throw e;
                }
            }
        } catch (IOException | RuntimeException e) {
            give(turn);
            throw e;
        }
    }

    /** Waits until no other writer of this JVM has {@code partial} open, then marks it taken. */
    private static void take(Path partial, String digest) throws InterruptedIOException {
        synchronized (WRITING) {
            while (!WRITING.add(partial)) {
                try {
                    WRITING.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting to write blob " + digest);
                }
            }
        }
    }

    private static void give(Path partial) {
        synchronized (WRITING) {
            WRITING.remove(partial);
            WRITING.notifyAll();
        }
    }

    @Override
    public long offset() {
        return offset;
    }

    @Override
    public OutputStream stream() {
        return stream;
    }

    @Override
    public Path commit() throws IOException {
        flush();
        String actual = Digests.of(running);
        if (!actual.equals(digest)) {
            Files.deleteIfExists(partial);
            long size = channel.size();
            close();
            throw new ImageException(ImageException.Failure.DIGEST_MISMATCH, "blob " + digest + " arrived as " + actual
                    + " (" + size + " bytes): the source sent other bytes; its partial download was deleted, try again");
        }
        channel.force(true);
        Files.setPosixFilePermissions(partial, StoreFiles.FILE_READABLE);
        Files.move(partial, blob, StandardCopyOption.ATOMIC_MOVE);
        StoreFiles.syncDirectory(blob.getParent());
        close();
        return blob;
    }

    @Override
    public void discard() throws IOException {
        ensureOpen();
        buffer.clear();
        channel.truncate(0);
        channel.position(0);
        running.reset();
        offset = 0;
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        try {
            flush(); // what arrived is kept for the next attempt
        } finally {
            closed = true;
            try {
                channel.close();
            } finally {
                give(turn);
            }
        }
    }

    /** Hashes the {@code length} bytes an interrupted attempt left in the file. */
    private void hashKept(long length) throws IOException {
        ByteBuffer chunk = ByteBuffer.allocate(1 << 20);
        long position = 0;
        for (int n; position < length && (n = channel.read(chunk.clear(), position)) > 0; position += n) {
            running.update(chunk.flip());
        }
    }

    private void flush() throws IOException {
        if (closed || buffer.position() == 0) {
            return;
        }
        buffer.flip();
        running.update(buffer.duplicate());
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
        buffer.clear();
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("the writer of blob " + digest + " is closed");
        }
    }

    /** The writer's stream: buffered appends; closing it only flushes (the writer owns the channel). */
    private final class Appender extends OutputStream {
        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] bytes, int from, int length) throws IOException {
            ensureOpen();
            while (length > 0) {
                if (!buffer.hasRemaining()) {
                    flush();
                }
                int n = Math.min(length, buffer.remaining());
                buffer.put(bytes, from, n);
                from += n;
                length -= n;
            }
        }

        @Override
        public void flush() throws IOException {
            PartialBlob.this.flush();
        }

        @Override
        public void close() throws IOException {
            PartialBlob.this.flush();
        }
    }

    /** The writer of a blob that is already stored: nothing to write, commit returns it. */
    private record Stored(Path blob) implements BlobWriter {
        @Override
        public long offset() {
            try {
                return Files.size(blob);
            } catch (IOException e) {
                return 0;
            }
        }

        @Override
        public OutputStream stream() {
            return OutputStream.nullOutputStream();
        }

        @Override
        public Path commit() {
            return blob;
        }

        @Override
        public void discard() {}

        @Override
        public void close() {}
    }
}
