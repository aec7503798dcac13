package dev.crucible.server.api;

import dev.crucible.sandbox.OutputListener;
import dev.crucible.server.http.JsonObject;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Streams a run's output as it is produced: NDJSON lines ({@code {"type":"stdout","data":"..."}}, then
 * {@code {"type":"result","result":{...}}}) or server-sent events ({@code event: stdout} / {@code event: result}).
 * UTF-8 sequences split across chunks are decoded whole. A background process's output also says where a reader that
 * lost the stream re-attaches ({@code "next"}: the offset after the event's bytes) and what the ring dropped
 * ({@code {"type":"dropped","bytes":N}}). Thread-safe: both streams' readers call it.
 */
public final class StreamWriter implements OutputListener {
    private final OutputStream out;
    private final boolean sse;
    private final JsonMapper json;
    private final CharsetDecoder[] decoders = {newDecoder(), newDecoder()};
    private final byte[][] pending = {new byte[0], new byte[0]};
    private volatile boolean broken;

    public StreamWriter(OutputStream out, boolean sse, JsonMapper json) {
        this.out = out;
        this.sse = sse;
        this.json = json;
    }

    private static CharsetDecoder newDecoder() {
        return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
    }

    /** Whether {@code Accept} asks for a stream, and which: {@code "sse"}, {@code "ndjson"} or null for none. */
    public static String kind(String accept) {
        String a = accept == null ? "" : accept.toLowerCase(Locale.ROOT);
        return a.contains("text/event-stream") ? "sse" : a.contains("application/x-ndjson") ? "ndjson" : null;
    }

    /** The content type of a stream of {@code kind}. */
    public static String contentType(String kind) {
        return "sse".equals(kind) ? "text/event-stream; charset=utf-8" : "application/x-ndjson; charset=utf-8";
    }

    @Override
    public void chunk(boolean stderr, byte[] bytes, int length) {
        chunk(stderr, bytes, length, -1);
    }

    /** A chunk that ends before {@code next} in its process's output (-1: not said). */
    public synchronized void chunk(boolean stderr, byte[] bytes, int length, long next) {
        int stream = stderr ? 1 : 0;
        byte[] joined = new byte[pending[stream].length + length];
        System.arraycopy(pending[stream], 0, joined, 0, pending[stream].length);
        System.arraycopy(bytes, 0, joined, pending[stream].length, length);
        CharBuffer chars = CharBuffer.allocate(joined.length + 1);
        ByteBuffer in = ByteBuffer.wrap(joined);
        decoders[stream].decode(in, chars, false);
        // an incomplete sequence at the end is kept for the next chunk
        pending[stream] = new byte[in.remaining()];
        in.get(pending[stream]);
        chars.flip();
        if (chars.hasRemaining()) {
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("type", stderr ? "stderr" : "stdout");
            event.put("data", chars.toString());
            if (next >= 0) {
                event.put("next", next);
            }
            send(stderr ? "stderr" : "stdout", event);
        }
    }

    public synchronized void result(Object result) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("type", "result");
        event.put("result", result);
        send("result", event);
    }

    /** The call failed after its stream began: the error the JSON answer would have carried. */
    public synchronized void error(String code, String message) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("type", "error");
        event.put("error", JsonObject.of("code", code, "message", message));
        send("error", event);
    }

    /** {@code bytes} of output were overwritten before this reader got them. */
    public synchronized void dropped(long bytes) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("type", "dropped");
        event.put("bytes", bytes);
        send("dropped", event);
    }

    /** Nothing new for a while: tells a client (and the proxies between) that the stream lives, and finds a gone one. */
    public synchronized void heartbeat() {
        send("heartbeat", Map.of("type", "heartbeat"));
    }

    /** Whether the client has gone (a write failed): the caller may stop producing. */
    public boolean broken() {
        return broken;
    }

    private void send(String name, Object event) {
        if (broken) {
            return;
        }
        try {
            String body = json.writeValueAsString(event);
            String frame = sse ? "event: " + name + "\ndata: " + body + "\n\n" : body + "\n";
            out.write(frame.getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException | RuntimeException e) {
            broken = true; // the client went away; the run goes on to its end and is cleaned up as usual
        }
    }
}
