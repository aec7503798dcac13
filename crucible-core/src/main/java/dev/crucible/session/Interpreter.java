package dev.crucible.session;

import dev.crucible.sandbox.Sandbox;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * One session agent running in a long-lived sandbox, spoken to in frames: a 4-byte big-endian length and UTF-8
 * JSON, one answer per request. A platform thread reads the answers (a blocking pipe read would pin a virtual
 * thread's carrier); callers wait for them with a deadline.
 */
final class Interpreter implements AutoCloseable {
    static final int MAX_FRAME = 128 * 1024 * 1024;
    private static final Object EOF = new Object();
    private static final int SIGINT = 2;

    private final Sandbox.Interactive box;
    private final JsonMapper json;
    private final BlockingQueue<Object> answers = new LinkedBlockingQueue<>();
    private final OutputStream requests;
    private volatile boolean busy;

    /** What became of one request. */
    sealed interface Outcome {
        /** The agent answered; {@code interruptedByTimeout} when only after the timeout's SIGINT. */
        record Answered(JsonNode answer, boolean interruptedByTimeout) implements Outcome {}

        /** The interpreter ended (a crash, os._exit, an OOM kill) before answering. */
        record Died(Integer exitCode, boolean oomKilled) implements Outcome {}

        /** It did not answer within the grace period after the interrupt. */
        record Stuck() implements Outcome {}
    }

    private Interpreter(Sandbox.Interactive box, JsonMapper json) {
        this.box = box;
        this.json = json;
        this.requests = box.stdin();
        Thread reader = new Thread(this::readAnswers, "crucible-session-reader");
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts the agent and waits for its ready frame. */
    static Interpreter start(Sandbox.Interactive box, JsonMapper json, long readyMillis, Path log)
            throws IOException, InterruptedException {
        Interpreter interpreter = new Interpreter(box, json);
        Object hello = interpreter.answers.poll(readyMillis, TimeUnit.MILLISECONDS);
        if (!(hello instanceof JsonNode node) || !node.path("ready").asBoolean(false)) {
            interpreter.close();
            throw new IOException("the interpreter did not start" + (hello == null ? " within " + readyMillis + " ms"
                    : "") + tail(log));
        }
        return interpreter;
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
                int length = in.readInt();
                if (length < 0 || length > MAX_FRAME) {
                    break; // not our agent talking any more: the session restarts
                }
                byte[] body = new byte[length];
                in.readFully(body);
                answers.add(json.readTree(body));
            }
        } catch (EOFException e) {
            // the interpreter ended
        } catch (IOException | RuntimeException e) {
            // a broken pipe or a frame that is not JSON: the same as an end
        }
        answers.add(EOF);
    }

    /**
     * Sends one request and waits up to {@code timeoutMs} for its answer; then interrupts (SIGINT to the program
     * and its children) and waits {@code graceMs} more.
     */
    Outcome call(ObjectNode request, long timeoutMs, long graceMs) throws InterruptedException {
        long oomBefore = box.oomKills();
        byte[] body = json.writeValueAsBytes(request);
        busy = true;
        try {
            try {
                byte[] frame = new byte[4 + body.length];
                frame[0] = (byte) (body.length >>> 24);
                frame[1] = (byte) (body.length >>> 16);
                frame[2] = (byte) (body.length >>> 8);
                frame[3] = (byte) body.length;
                System.arraycopy(body, 0, frame, 4, body.length);
                synchronized (requests) {
                    requests.write(frame);
                    requests.flush();
                }
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
            return new Outcome.Answered((JsonNode) answer, interrupted);
        } finally {
            busy = false;
        }
    }

    private Outcome died(long oomBefore) throws InterruptedException {
        for (int i = 0; i < 100 && box.alive(); i++) {
            Thread.sleep(5); // the agent is gone; bubblewrap follows within milliseconds
        }
        return new Outcome.Died(box.exitCode(), box.oomKills() > oomBefore);
    }

    /** Interrupts the running cell; false when none runs. */
    boolean interrupt() {
        return busy && box.signal(SIGINT) > 0;
    }

    boolean alive() {
        return box.alive();
    }

    @Override
    public void close() {
        box.close();
    }
}
