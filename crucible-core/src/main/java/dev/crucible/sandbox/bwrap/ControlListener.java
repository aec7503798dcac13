package dev.crucible.sandbox.bwrap;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server's end of one session sandbox's control socket (crucible-supervisor.c): a listener in a directory only
 * the server can reach, to which crucible-launch connects once, while still root and before the sandbox exists; the
 * listener is then closed and its file removed, so nothing can connect after it. Used by one launch.
 */
final class ControlListener implements AutoCloseable {
    private static final AtomicLong NEXT = new AtomicLong();
    /** How long a launcher may take to connect (it does so before it execs bwrap: a fork and an exec away). */
    static final long CONNECT_MS = 10_000;

    private final Path path;
    private final ServerSocketChannel listener;

    private ControlListener(Path path, ServerSocketChannel listener) {
        this.path = path;
        this.listener = listener;
    }

    /** A listener in {@code dir} (created 0700 if missing). */
    static ControlListener open(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir);
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        }
        Path path = dir.resolve("s" + NEXT.incrementAndGet() + ".sock");
        Files.deleteIfExists(path);
        ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            listener.bind(UnixDomainSocketAddress.of(path), 1);
            listener.configureBlocking(false);
        } catch (IOException e) {
            listener.close();
            throw e;
        }
        return new ControlListener(path, listener);
    }

    Path path() {
        return path;
    }

    /**
     * The launcher's connection, once made; the listener is closed either way, and {@code process} killed (and waited
     * for a moment) when it never connects.
     *
     * @throws IOException when {@code process} ended first or {@link #CONNECT_MS} passed
     */
    SocketChannel accept(Process process) throws IOException, InterruptedException {
        try {
            return connection(process);
        } catch (IOException | InterruptedException e) {
            process.destroyForcibly();
            try {
                process.waitFor(3, TimeUnit.SECONDS);
            } catch (InterruptedException again) {
                Thread.currentThread().interrupt();
            }
            throw e;
        } finally {
            close();
        }
    }

    private SocketChannel connection(Process process) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONNECT_MS);
        long pause = 1;
        while (true) {
            SocketChannel channel = listener.accept();
            if (channel != null) {
                channel.configureBlocking(true);
                return channel;
            }
            if (!process.isAlive()) {
                throw new IOException("the sandbox ended before its launcher connected its control socket (exit "
                        + process.exitValue() + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the sandbox's launcher did not connect its control socket within "
                        + CONNECT_MS + " ms");
            }
            Thread.sleep(pause);
            pause = Math.min(pause * 2, 10);
        }
    }

    @Override
    public void close() {
        try {
            listener.close();
        } catch (IOException e) {
            // closing a listener that was never used
        }
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            // removed with the work root at the latest
        }
    }
}
