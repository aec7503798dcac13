package dev.crucible.session.process;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A command started with {@code background: true}: it runs on after its request, its output kept in a ring for
 * whoever reads it later, its stdin open for writes when asked. Ends with its process, or with its sandbox
 * ({@link ProcessInfo#lost()}). Thread-safe.
 */
public final class BackgroundProcess {
    private volatile long pid;
    private final Command command;
    private final long startedAtMs;
    private final OutputRing output;
    private final CompletableFuture<Integer> exit;
    private volatile boolean stdinOpen;
    private volatile boolean timedOut;
    private volatile boolean use = true;
    private volatile Terminal pty;
    private final AtomicInteger terminals = new AtomicInteger();

    /** @param ended called when it ends (or its sandbox does), before a reader can see it ended */
    BackgroundProcess(Command command, long startedAtMs, boolean stdinOpen, int ringBytes,
            CompletableFuture<Integer> exit, Runnable ended) {
        this.command = command;
        this.pty = command.pty();
        this.startedAtMs = startedAtMs;
        this.stdinOpen = stdinOpen;
        this.output = new OutputRing(ringBytes);
        this.exit = exit;
        exit.whenComplete((status, failure) -> {
            this.stdinOpen = false;
            ended.run();
            output.close();
        });
    }

    public long pid() {
        return pid;
    }

    void started(long pid) {
        this.pid = pid;
    }

    void take(boolean stderr, ByteBuffer data) {
        output.append(stderr, data);
    }

    void use(boolean use) {
        this.use = use;
    }

    /** Whether it keeps its session from idling while it runs. */
    boolean use() {
        return use;
    }

    /** A terminal WebSocket attached to it ({@code +1}) or let go ({@code -1}). */
    public void attached(int change) {
        terminals.addAndGet(change);
    }

    void resized(Terminal size) {
        pty = size;
    }

    void timedOut() {
        timedOut = true;
    }

    void stdinClosed() {
        stdinOpen = false;
    }

    public boolean running() {
        return !exit.isDone();
    }

    /** Its end, for a caller that waits for it: the wait status, or a failure when its sandbox ended first. */
    CompletableFuture<Integer> exit() {
        return exit;
    }

    public ProcessInfo info() {
        Integer status = exit.isDone() && !exit.isCompletedExceptionally() ? exit.join() : null;
        return new ProcessInfo(pid, command.argv(), command.cwd(), Instant.ofEpochMilli(startedAtMs).toString(),
                !exit.isDone(), status == null ? null : WaitStatus.exitCode(status),
                status == null ? null : WaitStatus.signal(status), timedOut, exit.isCompletedExceptionally(), stdinOpen, output.total(),
                output.dropped(), pty, terminals.get());
    }

    /**
     * Its output from {@code from} on, at most {@code max} bytes, waiting up to {@code waitMs} for a first byte when
     * none is there yet (0: answer at once).
     */
    public Output read(long from, int max, long waitMs) throws InterruptedException {
        OutputRing.Read read = output.read(from, max, waitMs);
        return new Output(read.missed(), read.chunks().stream()
                .map(c -> new Chunk(c.stderr(), c.offset(), c.bytes())).toList(), read.next(), read.ended());
    }

    /** A run of one stream's bytes at {@code offset} of the process's output. */
    public record Chunk(boolean stderr, long offset, byte[] bytes) {}

    /**
     * @param missed bytes between the offset asked for and the first one returned, overwritten before anyone read them
     * @param next the offset to read from next
     * @param ended nothing more will come: the process has ended and all of its output was read
     */
    public record Output(long missed, List<Chunk> chunks, long next, boolean ended) {}
}
