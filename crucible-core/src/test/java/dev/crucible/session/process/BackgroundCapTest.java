package dev.crucible.session.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cap on a session's background processes (issue 49): starts racing each other, while some of the processes
 * end and are reaped from the table, never leave more than {@link Supervisor#MAX_BACKGROUND} running. The supervisor
 * at the socket's other end answers as crucible-supervisor.c does (HELLO, then STARTED for each SPAWN), at once, so
 * the starts contend for the table as hard as a host can make them.
 */
class BackgroundCapTest {
    private static final int HELLO = 64;
    private static final int SPAWN = 1;
    private static final int STARTED = 65;
    private static final int EXIT = 68;
    private static final int ROUNDS = 40;
    private static final int THREADS = 16;
    private static final int ATTEMPTS = 40;

    @TempDir
    Path dir;

    @Test
    void racingStartsNeverRunMoreThanTheCapWhileEndedOnesAreReaped() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Path socket = dir.resolve("s" + round);
            try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
                server.bind(UnixDomainSocketAddress.of(socket));
                SocketChannel host = SocketChannel.open(StandardProtocolFamily.UNIX);
                host.connect(UnixDomainSocketAddress.of(socket));
                try (SocketChannel peer = server.accept()) {
                    Thread supervisor = Thread.ofPlatform().daemon().start(() -> answer(peer));
                    Supervisor table = Supervisor.on(host, InstantSource.system(), () -> { });
                    int started = race(table);
                    long running = running(table);
                    assertThat(running).as("round %d: running in the table", round)
                            .isLessThanOrEqualTo(Supervisor.MAX_BACKGROUND);
                    assertThat(started).as("round %d: starts that ran", round).isGreaterThanOrEqualTo(
                            Supervisor.MAX_BACKGROUND);
                    host.close();
                    supervisor.join();
                }
            }
            Files.deleteIfExists(socket);
        }
    }

    /**
     * {@link #THREADS} threads let go at once, each starting {@link #ATTEMPTS} processes back to back, so refusals,
     * starts and ends interleave; the number that started. Each thread checks the table after each of its starts.
     */
    private static int race(Supervisor table) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        AtomicInteger started = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        try (ExecutorService threads = Executors.newFixedThreadPool(THREADS)) {
            List<Future<?>> all = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                all.add(threads.submit(() -> {
                    go.await();
                    for (int a = 0; a < ATTEMPTS; a++) {
                        try {
                            table.start(new Command(List.of("sleep", "inf"), Map.of(), "/", new byte[0], null),
                                    false, 0, false);
                            started.incrementAndGet();
                            most.accumulateAndGet((int) running(table), Math::max);
                        } catch (CommandException e) {
                            assertThat(e.kind()).isEqualTo(CommandException.Kind.TOO_MANY);
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : all) {
                f.get();
            }
        }
        assertThat(most.get()).as("the most running that a start saw").isLessThanOrEqualTo(Supervisor.MAX_BACKGROUND);
        return started.get();
    }

    private static long running(Supervisor table) {
        return table.processes().stream().filter(BackgroundProcess::running).count();
    }

    /** The supervisor's side: HELLO, then each SPAWN started at once; every third process ends right after. */
    private static void answer(SocketChannel peer) {
        try {
            frame(peer, HELLO, 0, ByteBuffer.allocate(4).putInt(2).array());
            ByteBuffer head = ByteBuffer.allocate(4);
            for (int pid = 2; ; pid++) {
                head.clear();
                if (!fill(peer, head)) {
                    return;
                }
                ByteBuffer frame = ByteBuffer.allocate(head.flip().getInt());
                if (!fill(peer, frame)) {
                    return;
                }
                int kind = frame.flip().get() & 0xff;
                int id = frame.getInt(4);
                if (kind == SPAWN) {
                    frame(peer, STARTED, id, ByteBuffer.allocate(4).putInt(pid).array());
                    if (pid % 3 == 0) {
                        frame(peer, EXIT, pid, ByteBuffer.allocate(4).putInt(0).array());
                    }
                }
            }
        } catch (IOException e) {
            // the host closed its end: the round is over
        }
    }

    private static boolean fill(SocketChannel peer, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (peer.read(buffer) < 0) {
                return false;
            }
        }
        return true;
    }

    private static void frame(SocketChannel peer, int kind, int id, byte[] body) throws IOException {
        ByteBuffer frame = ByteBuffer.allocate(12 + body.length);
        frame.putInt(8 + body.length).put((byte) kind).put((byte) 0).putShort((short) 0).putInt(id).put(body).flip();
        while (frame.hasRemaining()) {
            peer.write(frame);
        }
    }
}
