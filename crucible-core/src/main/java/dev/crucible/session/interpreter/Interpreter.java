package dev.crucible.session.interpreter;

import dev.crucible.sandbox.Sandbox;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * One session agent running in a long-lived sandbox, spoken to in frames: a 4-byte big-endian length and UTF-8
 * JSON, one answer per request. A platform thread reads the answers (a blocking pipe read would pin a virtual
 * thread's carrier); callers wait for them with a deadline.
 *
 * <p>The cell runs inside the agent's process, so it can write to the answer channel itself. The protocol holds
 * anyway: nothing is read ahead of a request (what a cell writes between requests waits in the pipe, whose size
 * the kernel bounds), each answer frame may be at most {@link #frameLimit} bytes and must carry the random id of
 * the request it answers. Anything else is a {@link Outcome.Violated violation}: the caller throws the interpreter
 * away. The server therefore holds at most one bounded frame per session, and no frame written before a request
 * can answer it.
 */
public final class Interpreter implements AutoCloseable {
    /** The ready frame's limit: the agent's greeting is a few dozen bytes. */
    static final int READY_FRAME = 64 * 1024;
    private static final Object EOF = new Object();
    private static final int SIGINT = 2;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Sandbox.Interactive box;
    private final JsonMapper json;
    /** Holds at most one answer: the reader reads one frame per permit, and permits are given one per request. */
    private final BlockingQueue<Object> answers = new LinkedBlockingQueue<>();
    private final Semaphore wanted; // one permit per request, and one for the ready frame of a started agent
    private final OutputStream requests;
    private volatile int limit = READY_FRAME;
    private volatile boolean busy;

    /** What became of one request. */
    public sealed interface Outcome {
        /** The agent answered; {@code interruptedByTimeout} when only after the timeout's SIGINT. */
        record Answered(JsonNode answer, boolean interruptedByTimeout) implements Outcome {}

        /** The interpreter ended (a crash, os._exit, an OOM kill) before answering. */
        record Died(Integer exitCode, boolean oomKilled) implements Outcome {}

        /** It did not answer within the grace period after the interrupt. */
        record Stuck() implements Outcome {}

        /** The answer channel carried something other than this request's answer (written by the cell). */
        record Violated(String why) implements Outcome {}
    }

    /** A frame written before its request, or larger than the limit, or not JSON: the interpreter is discarded. */
    private record Violation(String why) {}

    /**
     * The largest answer frame for a cell whose stdout and stderr are each capped at {@code outputBytes}: room for
     * both streams escaped as JSON, the result and the error, and rich display. The agents cut their answer to fit.
     */
    static int frameLimit(int outputBytes) {
        return (int) Math.min(Integer.MAX_VALUE, 4L * outputBytes + 4L * 1024 * 1024);
    }

    private Interpreter(Sandbox.Interactive box, JsonMapper json, boolean greets) {
        this.box = box;
        this.json = json;
        this.wanted = new Semaphore(greets ? 1 : 0);
        this.requests = box.stdin();
        Thread reader = new Thread(this::readAnswers, "crucible-session-reader");
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts the agent and waits for its ready frame. */
    public static Interpreter start(Sandbox.Interactive box, JsonMapper json, long readyMillis, Path log)
            throws IOException, InterruptedException {
        Interpreter interpreter = new Interpreter(box, json, true);
        Object hello = interpreter.answers.poll(readyMillis, TimeUnit.MILLISECONDS);
        if (hello instanceof Violation v) {
            interpreter.close();
            throw new IOException("the interpreter broke the protocol at start: " + v.why() + tail(log));
        }
        if (!(hello instanceof JsonNode node) || !node.path("ready").asBoolean(false)) {
            interpreter.close();
            throw new IOException("the interpreter did not start" + (hello == null ? " within " + readyMillis + " ms"
                    : "") + tail(log));
        }
        return interpreter;
    }

    /**
     * The agent of a sandbox restored whole ({@code Sandbox#restore}): it was saved between two requests, so it
     * greets no more and waits for the next one.
     */
    public static Interpreter restored(Sandbox.Interactive box, JsonMapper json) {
        return new Interpreter(box, json, false);
    }

    private static String tail(Path log) {
        try {
            String text = Files.readString(log).strip();
            return text.isEmpty() ? "" : ": " + (text.length() > 500 ? text.substring(text.length() - 500) : text);
        } catch (IOException e) {
            return "";
        }
    }

    private void readAnswers() {
        try (DataInputStream in = new DataInputStream(box.stdout())) {
            while (true) {
                wanted.acquire(); // never read ahead of a request
                int length = in.readInt();
                if (length < 0 || length > limit) {
                    answers.add(new Violation("a frame of " + Integer.toUnsignedString(length) + " bytes, more than the "
                            + limit + " an answer may take"));
                    return;
                }
                byte[] body = new byte[length];
                in.readFully(body);
                JsonNode answer;
                try {
                    answer = json.readTree(body);
                } catch (RuntimeException e) {
                    answers.add(new Violation("a frame that is not JSON"));
                    return;
                }
                answers.add(answer);
            }
        } catch (EOFException e) {
            // the interpreter ended
        } catch (IOException e) {
            // a broken pipe: the same as an end
        } catch (InterruptedException e) {
            return;
        }
        answers.add(EOF);
    }

    private static String newId() {
        byte[] id = new byte[16];
        RANDOM.nextBytes(id);
        return HexFormat.of().formatHex(id);
    }

    /**
     * Sends one request and waits up to {@code timeoutMs} for its answer; then interrupts (SIGINT to the program
     * and its children) and waits {@code graceMs} more.
     */
    public Outcome call(ObjectNode request, long timeoutMs, long graceMs) throws InterruptedException {
        long oomBefore = box.oomKills();
        String id = newId();
        int frameLimit = frameLimit(request.path("output_bytes").asInt(1 << 20));
        byte[] body = json.writeValueAsBytes(request.deepCopy().put("id", id).put("frame_bytes", frameLimit));
        if (!answers.isEmpty()) { // only an end or a violation can wait here
            Object left = answers.peek();
            return left instanceof Violation v ? new Outcome.Violated(v.why()) : died(oomBefore);
        }
        limit = frameLimit;
        busy = true;
        try {
            try {
                byte[] frame = new byte[4 + body.length];
                frame[0] = (byte) (body.length >>> 24);
                frame[1] = (byte) (body.length >>> 16);
                frame[2] = (byte) (body.length >>> 8);
                frame[3] = (byte) body.length;
                System.arraycopy(body, 0, frame, 4, body.length);
                if (!send(frame, timeoutMs)) {
                    return new Outcome.Stuck(); // it did not even read the request
                }
                wanted.release();
            } catch (IOException e) {
                return died(oomBefore);
            }
            Object answer = answers.poll(timeoutMs, TimeUnit.MILLISECONDS);
            boolean interrupted = false;
            if (answer == null) {
                interrupted = true;
                box.signal(SIGINT);
                answer = answers.poll(graceMs, TimeUnit.MILLISECONDS);
            }
            if (answer == null) {
                return new Outcome.Stuck();
            }
            if (answer == EOF) {
                return died(oomBefore);
            }
            if (answer instanceof Violation v) {
                return new Outcome.Violated(v.why());
            }
            JsonNode node = (JsonNode) answer;
            if (!id.equals(node.path("id").asString(""))) {
                return new Outcome.Violated("an answer frame that does not carry this request's id (written before"
                        + " the request, or by the cell)");
            }
            return new Outcome.Answered(node, interrupted);
        } finally {
            busy = false;
        }
    }

    /** Frames up to this size are written at once: an agent that answered every request before has read them all. */
    private static final int INLINE_FRAME = 16 * 1024;

    /**
     * Writes one request frame. A larger one than the pipe holds is written on a platform thread of its own and waited
     * for at most {@code timeoutMs}: an interpreter that stopped reading (stopped, or blocked) cannot hold the caller.
     *
     * @return false when the frame was not taken in time (the caller gives the interpreter up)
     */
    private boolean send(byte[] frame, long timeoutMs) throws IOException, InterruptedException {
        if (frame.length <= INLINE_FRAME) {
            synchronized (requests) {
                requests.write(frame);
                requests.flush();
            }
            return true;
        }
        CompletableFuture<Void> written = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("crucible-session-writer").start(() -> {
            try {
                synchronized (requests) {
                    requests.write(frame);
                    requests.flush();
                }
                written.complete(null);
            } catch (IOException | RuntimeException e) {
                written.completeExceptionally(e);
            }
        });
        try {
            written.get(timeoutMs, TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            box.close(); // the writer's pipe breaks with it: its thread ends
            return false;
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
    }

    private Outcome died(long oomBefore) throws InterruptedException {
        for (int i = 0; i < 100 && box.alive(); i++) {
            Thread.sleep(5); // the agent is gone; bubblewrap follows within milliseconds
        }
        return new Outcome.Died(box.exitCode(), box.oomKills() > oomBefore);
    }

    /** Interrupts the running cell; false when none runs. */
    public boolean interrupt() {
        return busy && box.signal(SIGINT) > 0;
    }

    public boolean alive() {
        return box.alive();
    }

    @Override
    public void close() {
        box.close();
    }
}
