package dev.crucible.session.ports;

import dev.crucible.sandbox.Sandbox;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Connections into sessions' sandboxes kept alive between exchanges (issue 50 item 5): at most {@link #KEPT_PER_PORT}
 * per port and {@link #KEPT_PER_SANDBOX} per sandbox, each for {@link #KEPT_MS} at most, never for another sandbox
 * (the key is the sandbox itself, so a session's restart or another session never gets one), and closed within a
 * second of the sandbox's end. One that has something to read when taken (its server closed it, or sent what was not
 * asked for) is closed instead of used. Thread-safe.
 */
public final class KeptConnections {
    /** Kept-alive connections per port of one sandbox, and per sandbox, at most. */
    public static final int KEPT_PER_PORT = 8, KEPT_PER_SANDBOX = 32;
    /** How long a connection is kept unused: under common servers' shortest keep-alive timeout (Node's 5 s). */
    public static final long KEPT_MS = 4_000;

    /** The kept connections of every sandbox, by sandbox and port, oldest first; guarded by itself. */
    private static final Map<Key, ArrayDeque<Kept>> KEPT = new HashMap<>();
    private static ScheduledExecutorService sweeper; // guarded by KEPT

    private record Key(Sandbox.Interactive box, int port) {}
    private record Kept(SocketChannel channel, long sinceNs) {}

    private KeptConnections() {}

    /** The most recently kept connection to {@code port} of {@code box}, or null. */
    public static SocketChannel take(Sandbox.Interactive box, int port) {
        synchronized (KEPT) {
            ArrayDeque<Kept> kept = KEPT.get(new Key(box, port));
            Kept last = kept == null ? null : kept.pollLast(); // the most recently used: the least likely let go
            return last == null ? null : last.channel();
        }
    }

    /** Whether a kept connection has nothing to read: not closed by its server, nothing sent that was not asked for. */
    public static boolean quiet(SocketChannel channel) {
        try {
            channel.configureBlocking(false);
            int n = channel.read(ByteBuffer.allocate(1));
            channel.configureBlocking(true);
            return n == 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Keeps {@code channel} for the next exchange with {@code port} of {@code box}, or closes it (full, or ended). */
    public static void keep(Sandbox.Interactive box, int port, SocketChannel channel) {
        synchronized (KEPT) {
            int all = KEPT.entrySet().stream().filter(e -> e.getKey().box() == box).mapToInt(e -> e.getValue().size())
                    .sum();
            ArrayDeque<Kept> kept = KEPT.computeIfAbsent(new Key(box, port), k -> new ArrayDeque<>());
            if (box.alive() && kept.size() < KEPT_PER_PORT && all < KEPT_PER_SANDBOX) {
                kept.addLast(new Kept(channel, System.nanoTime()));
                if (sweeper == null) { // once a second: what was unused for KEPT_MS, or is of an ended sandbox, closed
                    sweeper = Executors.newSingleThreadScheduledExecutor(
                            Thread.ofPlatform().daemon().name("crucible-kept-ports").factory());
                    sweeper.scheduleWithFixedDelay(KeptConnections::sweep, 1, 1, TimeUnit.SECONDS);
                }
                return;
            }
        }
        closeQuietly(channel);
    }

    private static void sweep() {
        List<SocketChannel> ended = new ArrayList<>();
        long oldest = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(KEPT_MS);
        synchronized (KEPT) {
            KEPT.entrySet().removeIf(e -> {
                boolean alive = e.getKey().box().alive();
                e.getValue().removeIf(k -> (!alive || k.sinceNs() - oldest < 0) && ended.add(k.channel()));
                return e.getValue().isEmpty();
            });
        }
        ended.forEach(KeptConnections::closeQuietly);
    }

    /** Closes {@code channel}, whatever happens. */
    public static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // closed either way
        }
    }
}
