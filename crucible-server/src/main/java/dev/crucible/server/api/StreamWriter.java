package dev.crucible.server.api;

import dev.crucible.sandbox.OutputListener;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Streams a run's output as it is produced: NDJSON lines ({@code {"type":"stdout","data":"..."}}, then
 * {@code {"type":"result","result":{...}}}) or server-sent events ({@code event: stdout} / {@code event: result}).
 * UTF-8 sequences split across chunks are decoded whole. Thread-safe: both streams' readers call it.
 */
final class StreamWriter implements OutputListener {
    private final OutputStream out;
    private final boolean sse;
    private final JsonMapper json;
    private final CharsetDecoder[] decoders = {newDecoder(), newDecoder()};
    private final byte[][] pending = {new byte[0], new byte[0]};
    private volatile boolean broken;

    StreamWriter(OutputStream out, boolean sse, JsonMapper json) {
        this.out = out;
        this.sse = sse;
        this.json = json;
    }

    private static CharsetDecoder newDecoder() {
        return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
    }

    @Override
    public synchronized void chunk(boolean stderr, byte[] bytes, int length) {
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
            Map<String, String> event = new LinkedHashMap<>();
            event.put("type", stderr ? "stderr" : "stdout");
            event.put("data", chars.toString());
            send(stderr ? "stderr" : "stdout", event);
        }
    }

    synchronized void result(Object result) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("type", "result");
        event.put("result", result);
        send("result", event);
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
