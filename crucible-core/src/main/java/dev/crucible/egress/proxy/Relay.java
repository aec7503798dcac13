package dev.crucible.egress.proxy;

import dev.crucible.os.Splice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Moves bytes both ways between a client and an upstream channel, charging each to the budget: the caller's thread
 * moves upstream to client, a second platform thread client to upstream (both block on their sockets). The bytes go
 * through a pipe in the kernel ({@link Splice}), or through a buffer of this process where the JDK's descriptors cannot
 * be read. A side that ends is half-closed on the other; a failure, a spent budget or, for forward HTTP, the end of the
 * response shuts both down and closes them.
 */
final class Relay {
    private static final int BUFFER = 256 * 1024;

    private final SocketChannel client;
    private final SocketChannel upstream;
    private final ByteBudget budget;
    private final Runnable touch;
    final AtomicLong sent = new AtomicLong();
    final AtomicLong received = new AtomicLong();
    private volatile boolean capped;
    private volatile boolean failed;
    /** Set before this relay closes the channels itself: the other direction's exception is then no failure. */
    private volatile boolean closing;

    Relay(SocketChannel client, SocketChannel upstream, ByteBudget budget, Runnable touch) {
        this.client = client;
        this.upstream = upstream;
        this.budget = budget;
        this.touch = touch;
    }

    /** Writes {@code bytes} to upstream as sent bytes; false when the budget cut them (both sides closed). */
    boolean send(ByteBuffer bytes) {
        return copyOnce(bytes, upstream, sent);
    }

    /**
     * Relays until both directions end; {@code closeOnResponseEnd} for forward HTTP.
     *
     * @return how it ended, unless something else (the watchdog, the proxy) closed the channels first
     */
    EgressEnding run(boolean closeOnResponseEnd) throws InterruptedException {
        Thread up = Thread.ofPlatform().daemon().name("crucible-egress-up").start(() -> pump(client, upstream, sent));
        pump(upstream, client, received);
        if (closeOnResponseEnd || capped || failed) {
            closeBoth();
        }
        up.join();
        return ending();
    }

    /** How the relay ended (so far): cut by the budget, failed, or closed. */
    EgressEnding ending() {
        return capped ? EgressEnding.BYTE_CAP : failed ? EgressEnding.ERROR : EgressEnding.CLOSED;
    }

    private void pump(SocketChannel from, SocketChannel to, AtomicLong count) {
        if (Splice.available()) {
            splice(from, to, count);
        } else {
            copy(from, to, count);
        }
    }

    /** Through the kernel: what the source has goes into a pipe, then what the budget grants goes on. */
    private void splice(SocketChannel from, SocketChannel to, AtomicLong count) {
        try (Splice splice = Splice.between(from, to)) {
            while (true) {
                long filled = splice.fill(Splice.CHUNK);
                if (filled == 0) {
                    to.shutdownOutput();
                    return;
                }
                touch.run();
                long granted = budget.take(filled);
                splice.drain(granted);
                touch.run();
                count.addAndGet(granted);
                if (granted < filled) {
                    capped = true;
                    closeBoth();
                    return;
                }
            }
        } catch (IOException e) {
            failed |= !closing;
            closeBoth();
        }
    }

    private void copy(SocketChannel from, SocketChannel to, AtomicLong count) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER); // direct: no copy through a temporary buffer per read
        try {
            while (true) {
                buffer.clear();
                if (from.read(buffer) < 0) {
                    to.shutdownOutput();
                    return;
                }
                touch.run();
                buffer.flip();
                if (!copyOnce(buffer, to, count)) {
                    return;
                }
            }
        } catch (IOException e) {
            failed |= !closing;
            closeBoth();
        }
    }

    private boolean copyOnce(ByteBuffer buffer, SocketChannel to, AtomicLong count) {
        int wanted = buffer.remaining();
        int granted = (int) budget.take(wanted);
        buffer.limit(buffer.position() + granted);
        try {
            while (buffer.hasRemaining()) {
                to.write(buffer);
                touch.run();
            }
        } catch (IOException e) {
            failed |= !closing;
            closeBoth();
            return false;
        }
        count.addAndGet(granted);
        if (granted < wanted) {
            capped = true;
            closeBoth();
            return false;
        }
        return true;
    }

    /** Shut down first: a splice blocked on either socket holds its own descriptor, which a close alone leaves open. */
    private void closeBoth() {
        closing = true;
        Splice.shutDown(client);
        Splice.shutDown(upstream);
    }
}
