package dev.crucible.os;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sockets spliced through a pipe in the kernel (the egress relay): bytes arrive whole across kinds of socket and a
 * non-blocking source, a channel closed under a splice cannot hand it another file, a shut-down source ends a splice
 * that waits on it, and nothing stays open. Real sockets on loopback and in a temporary directory.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a relay that never ends fails here rather than holding the build
class SpliceTest {
    /** Two connected ends of a loopback TCP connection: {@code [client, server]}. */
    private static SocketChannel[] tcpPair() throws IOException {
        try (ServerSocketChannel listener = ServerSocketChannel.open()) {
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            SocketChannel client = SocketChannel.open(listener.getLocalAddress());
            return new SocketChannel[] {client, listener.accept()};
        }
    }

    private static SocketChannel[] unixPair(Path dir) throws IOException {
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listener.bind(UnixDomainSocketAddress.of(dir.resolve("s.sock")));
            SocketChannel client = SocketChannel.open(listener.getLocalAddress());
            return new SocketChannel[] {client, listener.accept()};
        }
    }

    private static long openDescriptors() throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    @Test
    void bytesCrossFromANonBlockingTcpSocketToAUnixSocketWholeAndTheEndReadsAsZero(@TempDir Path dir)
            throws Exception {
        assertThat(Splice.available()).as("the tests run with --add-exports java.base/sun.nio.ch (the root POM)")
                .isTrue();
        SocketChannel[] tcp = tcpPair();
        SocketChannel[] unix = unixPair(dir);
        byte[] sent = new byte[8 << 20];
        new Random(7).nextBytes(sent);
        tcp[1].configureBlocking(false); // the splice then waits in poll(2), as for a channel a virtual thread used
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            try {
                tcp[0].write(ByteBuffer.wrap(sent));
                tcp[0].shutdownOutput();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        MessageDigest received = MessageDigest.getInstance("SHA-256");
        CompletableFuture<Long> reader = CompletableFuture.supplyAsync(() -> {
            long total = 0;
            ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
            try {
                for (int n; (n = unix[1].read(buffer.clear())) >= 0;) {
                    received.update(buffer.array(), 0, n);
                    total += n;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return total;
        });
        try (Splice splice = Splice.between(tcp[1], unix[0])) {
            for (long filled; (filled = splice.fill(Splice.CHUNK)) > 0;) {
                splice.drain(filled);
            }
        }
        unix[0].shutdownOutput();
        writer.get(30, TimeUnit.SECONDS);
        assertThat(reader.get(30, TimeUnit.SECONDS)).isEqualTo(sent.length);
        assertThat(received.digest()).isEqualTo(MessageDigest.getInstance("SHA-256").digest(sent));
        for (SocketChannel channel : new SocketChannel[] {tcp[0], tcp[1], unix[0], unix[1]}) {
            channel.close();
        }
    }

    /**
     * The source's channel closed by another thread while a splice holds it: the descriptor number it had is reused
     * by the next file opened, yet the splice still reads the socket (its own duplicate), never that file.
     */
    @Test
    void aChannelClosedUnderASpliceLeavesItReadingItsOwnSocketNeverTheFileOpenedNext(@TempDir Path dir)
            throws Exception {
        SocketChannel[] source = tcpPair();
        SocketChannel[] target = unixPair(dir);
        Path secret = dir.resolve("secret");
        Files.writeString(secret, "a file that is not the socket");
        try (Splice splice = Splice.between(source[1], target[0])) {
            source[1].close();
            try (FileChannel file = FileChannel.open(secret, StandardOpenOption.READ)) {
                source[0].write(StandardCharsets.US_ASCII.encode("from the socket"));
                source[0].shutdownOutput();
                ByteBuffer got = ByteBuffer.allocate(64);
                for (long filled; (filled = splice.fill(64)) > 0;) {
                    splice.drain(filled);
                }
                target[0].shutdownOutput();
                while (target[1].read(got) >= 0) {
                    // until the end
                }
                assertThat(new String(got.array(), 0, got.position(), StandardCharsets.US_ASCII))
                        .isEqualTo("from the socket");
            }
        }
        for (SocketChannel channel : new SocketChannel[] {source[0], target[0], target[1]}) {
            channel.close();
        }
    }

    @Test
    void aSpliceWaitingOnASilentSourceEndsWhenTheSourceIsShutDownAndLeavesNothingOpen(@TempDir Path dir)
            throws Exception {
        long before = openDescriptors();
        SocketChannel[] source = tcpPair();
        SocketChannel[] target = unixPair(dir);
        Splice splice = Splice.between(source[1], target[0]);
        CompletableFuture<Long> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return splice.fill(Splice.CHUNK);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, runnable -> Thread.ofPlatform().start(runnable));
        Splice.shutDown(source[1]);
        assertThat(waiting.get(10, TimeUnit.SECONDS)).isZero();
        splice.close();
        for (SocketChannel channel : new SocketChannel[] {source[0], target[0], target[1]}) {
            channel.close();
        }
        assertThat(openDescriptors()).isEqualTo(before);
    }
}
