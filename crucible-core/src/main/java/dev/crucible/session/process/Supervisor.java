package dev.crucible.session.process;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The host's end of a session sandbox's supervisor (crucible-supervisor.c): one virtual reader thread per session,
 * frames both ways as that file describes, commands started on request and followed to their end. Thread-safe: commands of
 * one session run at once, each waits for its own end. Ends (every waiting command failing) when the socket closes,
 * that is when the sandbox ends.
 */
public final class Supervisor implements AutoCloseable {
    private static final int SPAWN = 1;
    private static final int SIGNAL = 2;
    private static final int HELLO = 64;
    private static final int STARTED = 65;
    private static final int ERR = 66;
    private static final int DATA = 67;
    private static final int EXIT = 68;
    private static final int PONG = 69;
    private static final int VERSION = 1;
    /** The supervisor's own bound on one request (crucible-supervisor.c's MAX_FRAME), less its header. */
    public static final int MAX_REQUEST_BYTES = (2 << 20) - 64;
    /** A frame from the supervisor is at most a chunk of output and its header. */
    private static final int MAX_ANSWER_BYTES = 64 * 1024;
    private static final int SIGKILL = 9;
    /** How long the supervisor may take to start a command or answer its kill. */
    private static final long ANSWER_MS = 10_000;

    private final SocketChannel channel;
    private final AtomicInteger requests = new AtomicInteger();
    private final Map<Integer, Running> starting = new ConcurrentHashMap<>();
    private final Map<Long, Running> running = new ConcurrentHashMap<>();
    private final CompletableFuture<Integer> hello = new CompletableFuture<>();
    private volatile IOException ended;

    private Supervisor(SocketChannel channel) {
        this.channel = channel;
        // a socket, not a pipe: a virtual thread parks on it, so an idle session holds no platform thread for it
        Thread.ofVirtual().name("crucible-supervisor-reader").start(this::read);
    }

    /** Follows the supervisor on {@code channel}; its HELLO is checked by the first command. */
    public static Supervisor on(SocketChannel channel) {
        return new Supervisor(channel);
    }

    /**
     * Runs {@code command} to its end, or kills it (its whole process group) at {@code timeoutMs}.
     *
     * @param outputCap the bytes kept of each stream; the rest is counted as cut, never buffered
     * @throws CommandException when the supervisor could not start it (no such program or directory, too many
     *     commands) or its sandbox ended under it
     */
    public CommandResult run(Command command, long timeoutMs, int outputCap) throws InterruptedException {
        long start = System.nanoTime();
        Running run = start(command, outputCap);
        boolean timedOut = false;
        Integer status;
        try {
            status = run.exit.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            timedOut = true;
            send(SIGNAL, 1, (int) run.pid, ByteBuffer.allocate(4).putInt(SIGKILL).array());
            status = await(run.exit, "the command's end after its kill");
        } catch (ExecutionException e) {
            throw failure(e);
        }
        long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        boolean signalled = (status & 0x7f) != 0;
        return new CommandResult(signalled ? null : (status >> 8) & 0xff, signalled ? status & 0x7f : null,
                run.stdout.text(), run.stderr.text(), run.stdout.cut(), run.stderr.cut(), timedOut, durationMs,
                run.pid);
    }

    private Running start(Command command, int outputCap) throws InterruptedException {
        int version = await(hello, "the supervisor's hello");
        if (version != VERSION) {
            throw new CommandException(CommandException.Kind.BROKEN, "the session's supervisor speaks version "
                    + version + ", not " + VERSION);
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        strings(body, command.argv().toArray(String[]::new));
        strings(body, command.env().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .toArray(String[]::new));
        string(body, command.cwd().getBytes(StandardCharsets.UTF_8));
        string(body, command.stdin());
        if (body.size() > MAX_REQUEST_BYTES) {
            throw new CommandException(CommandException.Kind.TOO_LARGE, "the command, its environment and its stdin"
                    + " take " + body.size() + " bytes; at most " + MAX_REQUEST_BYTES + " are taken");
        }
        int id = requests.incrementAndGet();
        Running run = new Running(outputCap);
        starting.put(id, run);
        try {
            send(SPAWN, 0, id, body.toByteArray());
            long pid = await(run.started, "the command's start");
            run.pid = pid;
            return run;
        } finally {
            starting.remove(id);
        }
    }

    private <T> T await(CompletableFuture<T> answer, String what) throws InterruptedException {
        try {
            return answer.get(ANSWER_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new CommandException(CommandException.Kind.BROKEN, "the session's supervisor did not send " + what
                    + " within " + ANSWER_MS + " ms");
        } catch (ExecutionException e) {
            throw failure(e);
        }
    }

    private static CommandException failure(ExecutionException e) {
        return e.getCause() instanceof CommandException c ? c
                : new CommandException(CommandException.Kind.BROKEN, "the session's sandbox ended: "
                        + e.getCause().getMessage());
    }

    /**
     * Writes one frame, bounded: a supervisor that takes nothing (stopped by the session's own programs, with the
     * socket's buffer full) fails the call within {@link #ANSWER_MS} and its socket is closed, never a blocked thread.
     */
    private synchronized void send(int kind, int flags, int id, byte[] body) throws InterruptedException {
        IOException gone = ended;
        if (gone != null) {
            throw new CommandException(CommandException.Kind.BROKEN, "the session's sandbox ended: " + gone.getMessage());
        }
        ByteBuffer frame = ByteBuffer.allocate(12 + body.length);
        frame.putInt(8 + body.length).put((byte) kind).put((byte) flags).putShort((short) 0).putInt(id).put(body).flip();
        java.util.concurrent.Future<?> write = WRITERS.submit(() -> {
            while (frame.hasRemaining()) {
                channel.write(frame);
            }
            return null;
        });
        try {
            write.get(ANSWER_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            close(); // the blocked write ends with the socket
            throw new CommandException(CommandException.Kind.BROKEN, "the session's supervisor took no request for "
                    + ANSWER_MS + " ms (stopped?)");
        } catch (ExecutionException e) {
            throw new CommandException(CommandException.Kind.BROKEN, "the session's sandbox ended: "
                    + e.getCause().getMessage());
        }
    }

    /** Where frames are written: a socket parks a virtual thread, so a bounded wait costs no platform thread. */
    private static final java.util.concurrent.ExecutorService WRITERS =
            java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();

    private static void strings(ByteArrayOutputStream out, String[] values) {
        out.writeBytes(ByteBuffer.allocate(4).putInt(values.length).array());
        for (String v : values) {
            string(out, v.getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void string(ByteArrayOutputStream out, byte[] value) {
        out.writeBytes(ByteBuffer.allocate(4).putInt(value.length).array());
        out.writeBytes(value);
    }

    /** The reader: every frame in order, until the socket ends; then everything still waiting fails. */
    private void read() {
        ByteBuffer head = ByteBuffer.allocate(4);
        try {
            while (true) {
                head.clear();
                fill(head);
                int length = head.flip().getInt();
                if (length < 8 || length > MAX_ANSWER_BYTES + 8) {
                    throw new IOException("the supervisor sent a frame of " + length + " bytes");
                }
                ByteBuffer frame = ByteBuffer.allocate(length);
                fill(frame);
                frame.flip();
                int kind = frame.get() & 0xff;
                int flags = frame.get() & 0xff;
                frame.getShort(); // reserved
                dispatch(kind, flags, frame.getInt() & 0xffffffffL, frame);
            }
        } catch (IOException e) {
            end(e);
        } catch (RuntimeException e) {
            end(new IOException("the supervisor broke its protocol: " + e.getMessage(), e));
        }
    }

    private void fill(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new EOFException("its supervisor's socket closed");
            }
        }
    }

    private void dispatch(int kind, int flags, long id, ByteBuffer body) throws IOException {
        switch (kind) {
            case HELLO -> hello.complete(body.getInt());
            case STARTED -> {
                Running run = starting.get((int) id);
                if (run == null) {
                    throw new IOException("a command started for no request");
                }
                long pid = body.getInt() & 0xffffffffL;
                running.put(pid, run);
                run.started.complete(pid);
            }
            case ERR -> {
                Running run = starting.get((int) id);
                int errno = body.getInt();
                byte[] text = new byte[body.getInt()];
                body.get(text);
                if (run != null) {
                    run.started.completeExceptionally(new CommandException(errno == 11 ? CommandException.Kind.TOO_MANY
                            : CommandException.Kind.NOT_STARTED, new String(text, StandardCharsets.UTF_8)));
                }
            }
            case DATA -> {
                Running run = running.get(id);
                if (run != null) {
                    (flags == 2 ? run.stderr : run.stdout).take(body);
                }
            }
            case EXIT -> {
                Running run = running.remove(id);
                if (run != null) {
                    run.exit.complete(body.getInt());
                }
            }
            case PONG -> { }
            default -> throw new IOException("the supervisor sent a frame of kind " + kind);
        }
    }

    private void end(IOException why) {
        ended = why;
        hello.completeExceptionally(why);
        for (Running run : starting.values()) {
            run.started.completeExceptionally(why);
        }
        for (Running run : running.values()) {
            run.exit.completeExceptionally(why);
        }
    }

    /** Closes the socket: the supervisor ends, and the sandbox with it. */
    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // already closed
        }
    }

    /** One command followed by the reader: its pid, its two streams, its end. */
    private static final class Running {
        final CompletableFuture<Long> started = new CompletableFuture<>();
        final CompletableFuture<Integer> exit = new CompletableFuture<>();
        final Capped stdout;
        final Capped stderr;
        volatile long pid;

        Running(int cap) {
            this.stdout = new Capped(cap);
            this.stderr = new Capped(cap);
        }
    }

    /** The first {@code cap} bytes of a stream, and whether more came. */
    private static final class Capped {
        private final int cap;
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
        private boolean cut;

        Capped(int cap) {
            this.cap = cap;
        }

        synchronized void take(ByteBuffer data) {
            int room = cap - kept.size();
            int n = Math.min(room, data.remaining());
            if (n > 0) {
                kept.write(data.array(), data.arrayOffset() + data.position(), n);
            }
            if (data.remaining() > n) {
                cut = true;
            }
        }

        synchronized String text() {
            return kept.toString(StandardCharsets.UTF_8);
        }

        synchronized boolean cut() {
            return cut;
        }
    }
}
