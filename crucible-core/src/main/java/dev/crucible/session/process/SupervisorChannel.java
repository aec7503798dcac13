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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The protocol of a session sandbox's supervisor (crucible-supervisor.c), host side: frames both ways as that file
 * describes, one virtual reader thread per session, every request answered within {@link #ANSWER_MS} or failed as
 * {@code BROKEN}. Thread-safe. Ends (every waiting request and command failing) when the socket closes, that is when
 * the sandbox ends.
 */
final class SupervisorChannel implements AutoCloseable {
    private static final int SPAWN = 1;
    private static final int SIGNAL = 2;
    private static final int WRITE = 4;
    private static final int RESIZE = 5;
    private static final int HELLO = 64;
    private static final int STARTED = 65;
    private static final int ERR = 66;
    private static final int DATA = 67;
    private static final int EXIT = 68;
    private static final int PONG = 69;
    private static final int WRITTEN = 70;
    private static final int VERSION = 2;
    private static final int ESRCH = 3;
    private static final int EAGAIN = 11;
    private static final int EPIPE = 32;
    private static final int ENFILE = 23;
    private static final int EMFILE = 24;
    private static final int SIGKILL = 9;
    /** The stdin bytes the supervisor holds for a process that has not read them (crucible-supervisor.c). */
    static final int MAX_STDIN_BYTES = 1 << 20;
    /** The supervisor's own bound on one request (crucible-supervisor.c's MAX_FRAME), less its header. */
    static final int MAX_REQUEST_BYTES = (2 << 20) - 64;
    /** A frame from the supervisor is at most a chunk of output and its header. */
    private static final int MAX_ANSWER_BYTES = 64 * 1024;
    /** How long the supervisor may take to answer a request. */
    static final long ANSWER_MS = 10_000;
    /** Where frames are written: a socket parks a virtual thread, so a bounded wait costs no platform thread. */
    private static final ExecutorService WRITERS = Executors.newVirtualThreadPerTaskExecutor();

    private final SocketChannel channel;
    private final AtomicInteger requests = new AtomicInteger();
    private final Map<Integer, Running> starting = new ConcurrentHashMap<>();
    private final Map<Integer, CompletableFuture<Long>> writes = new ConcurrentHashMap<>();
    private final Map<Long, Running> running = new ConcurrentHashMap<>();
    private final CompletableFuture<Integer> hello = new CompletableFuture<>();
    private volatile IOException ended;

    /** Whether its supervisor has gone (its socket closed): it leaves with the interpreter, the sandbox follows. */
    boolean ended() {
        return ended != null;
    }

    SupervisorChannel(SocketChannel channel) {
        this.channel = channel;
        // a socket, not a pipe: a virtual thread parks on it, so an idle session holds no platform thread for it
        Thread.ofVirtual().name("crucible-supervisor-reader").start(this::read);
    }

    /**
     * Starts {@code command}; {@code run} then gets its output and its end.
     *
     * @param keepStdin whether its stdin stays open after the command's stdin, for {@link #write}
     * @return its pid in the sandbox
     */
    long spawn(Command command, boolean keepStdin, Running run) throws InterruptedException {
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
        body.writeBytes(ByteBuffer.allocate(8).putInt(command.pty() == null ? 0 : command.pty().rows())
                .putInt(command.pty() == null ? 0 : command.pty().cols()).array());
        if (body.size() > MAX_REQUEST_BYTES) {
            throw new CommandException(CommandException.Kind.TOO_LARGE, "the command, its environment and its stdin"
                    + " take " + body.size() + " bytes; at most " + MAX_REQUEST_BYTES + " are taken");
        }
        int id = requests.incrementAndGet();
        starting.put(id, run);
        try {
            send(SPAWN, (keepStdin ? 1 : 0) | (command.pty() != null ? 2 : 0) | (command.root() ? 4 : 0), id,
                    body.toByteArray());
            long pid = await(run.started, "the command's start");
            run.pid = pid;
            return pid;
        } finally {
            starting.remove(id);
        }
    }

    /** Sizes {@code pid}'s terminal (its foreground group gets SIGWINCH); a process without one is left. */
    void resize(long pid, Terminal size) throws InterruptedException {
        send(RESIZE, 0, (int) pid, ByteBuffer.allocate(8).putInt(size.rows()).putInt(size.cols()).array());
    }

    /** Sends {@code signal} to {@code pid}, or to its process group; a process that has ended meanwhile is left. */
    void signal(long pid, int signal, boolean group) throws InterruptedException {
        send(SIGNAL, group ? 1 : 0, (int) pid, ByteBuffer.allocate(4).putInt(signal).array());
    }

    /**
     * Queues {@code bytes} for a process's stdin, then closes it when {@code close}; answers the bytes queued.
     *
     * @throws CommandException {@code STDIN_CLOSED}, {@code STDIN_FULL} (it has not read 1 MiB written before),
     *     {@code TOO_LARGE}
     */
    long write(long pid, byte[] bytes, boolean close) throws InterruptedException {
        if (bytes.length > MAX_STDIN_BYTES) {
            throw new CommandException(CommandException.Kind.TOO_LARGE, "at most " + MAX_STDIN_BYTES
                    + " bytes go to a process's stdin in one request, not " + bytes.length);
        }
        int id = requests.incrementAndGet();
        CompletableFuture<Long> written = new CompletableFuture<>();
        writes.put(id, written);
        try {
            send(WRITE, close ? 1 : 0, id, ByteBuffer.allocate(4 + bytes.length).putInt((int) pid).put(bytes).array());
            return await(written, "the write's answer");
        } finally {
            writes.remove(id);
        }
    }

    <T> T await(CompletableFuture<T> answer, String what) throws InterruptedException {
        try {
            return answer.get(ANSWER_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new CommandException(CommandException.Kind.BROKEN, "the session's supervisor did not send " + what
                    + " within " + ANSWER_MS + " ms");
        } catch (ExecutionException e) {
            throw failure(e);
        }
    }

    static CommandException failure(ExecutionException e) {
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
        Future<?> write = WRITERS.submit(() -> {
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
        } catch (Throwable e) { // never a reader gone with its waiters left waiting
            end(new IOException("the supervisor's reader failed: " + e, e));
            throw e;
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
                long pid = body.getInt() & 0xffffffffL;
                if (run == null) { // its caller gave up waiting (or was interrupted): nobody follows it, so it goes
                    Thread.ofVirtual().name("crucible-orphan-kill").start(() -> {
                        try {
                            signal(pid, SIGKILL, true);
                        } catch (CommandException | InterruptedException e) {
                            // the sandbox ended: so did it
                        }
                    });
                    return;
                }
                running.put(pid, run);
                run.started.complete(pid);
            }
            case ERR -> {
                int errno = body.getInt();
                int length = body.getInt();
                if (length < 0 || length > body.remaining()) {
                    throw new IOException("the supervisor sent an error of " + length + " bytes in a frame of "
                            + body.remaining());
                }
                byte[] text = new byte[length];
                body.get(text);
                String why = new String(text, StandardCharsets.UTF_8);
                Running run = starting.get((int) id);
                if (run != null) {
                    run.started.completeExceptionally(new CommandException(errno == EAGAIN || errno == EMFILE
                            || errno == ENFILE ? CommandException.Kind.TOO_MANY : CommandException.Kind.NOT_STARTED,
                            errno == EMFILE ? why + " (the session has as many open files as its limit allows)" : why));
                }
                CompletableFuture<Long> write = writes.get((int) id);
                if (write != null) {
                    write.completeExceptionally(new CommandException(errno == EAGAIN ? CommandException.Kind.STDIN_FULL
                            : errno == ESRCH || errno == EPIPE ? CommandException.Kind.STDIN_CLOSED
                            : CommandException.Kind.BROKEN, why));
                }
            }
            case WRITTEN -> {
                CompletableFuture<Long> write = writes.get((int) id);
                if (write != null) { // else its caller gave up waiting: the bytes are queued all the same
                    write.complete(body.getInt() & 0xffffffffL);
                }
            }
            case DATA -> {
                Running run = running.get(id);
                if (run != null) {
                    run.output.take(flags == 2, body);
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
        for (CompletableFuture<Long> write : writes.values()) {
            write.completeExceptionally(why);
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

    /** One command followed by the reader: its pid, where its output goes, its end. */
    static final class Running {
        final CompletableFuture<Long> started = new CompletableFuture<>();
        final CompletableFuture<Integer> exit;
        final Sink output;
        volatile long pid;

        Running(Sink output, CompletableFuture<Integer> exit) {
            this.output = output;
            this.exit = exit;
        }
    }

    /** Where a command's output goes: capped for its caller, or a background process's ring. */
    @FunctionalInterface
    interface Sink {
        void take(boolean stderr, ByteBuffer data);
    }
}
