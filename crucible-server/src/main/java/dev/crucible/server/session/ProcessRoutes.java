package dev.crucible.server.session;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.access.Auth;
import dev.crucible.server.api.StreamWriter;
import dev.crucible.server.http.JsonObject;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionProcesses;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.process.Terminal;
import io.javalin.http.Context;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The command and process routes of a session (issue 27): {@code POST …/commands} (answered whole, streamed by
 * {@code Accept}, or started in the background), and a background process's info, output (a snapshot from an
 * offset, or followed as a stream), stdin and signals. Handlers only: the server's route table registers them.
 */
public final class ProcessRoutes {
    /** How long a follower waits for output before it sends a heartbeat (and so finds a client that left). */
    private static final long HEARTBEAT_MS = 15_000;
    /** The longest {@code wait_ms} of a snapshot read (a long poll). */
    private static final long MAX_WAIT_MS = 30_000;
    private static final int CHUNK = 64 * 1024;
    /** The output a streamed command may have waiting for a slow client before the stream skips some. */
    private static final int STREAM_QUEUE_BYTES = 1 << 20;

    private final SessionManager sessions;
    private final Auth auth;
    private final SessionRoutes.BodyReader bodies;
    private final JsonMapper json;

    public ProcessRoutes(SessionManager sessions, Auth auth, SessionRoutes.BodyReader bodies, JsonMapper json) {
        this.sessions = sessions;
        this.auth = auth;
        this.bodies = bodies;
        this.json = json;
    }

    record StdinBody(@JsonProperty("data") String data, @JsonProperty("close") Boolean close) {}

    record SignalBody(@JsonProperty("signal") Object signal, @JsonProperty("group") Boolean group) {}

    private String owner(Context ctx) {
        return auth.owner(ctx.header("Authorization"));
    }

    /**
     * Runs a command to its end (JSON, or a stream of its output then its result, by {@code Accept}), or starts it in
     * the background ({@code 201} and the process).
     */
    public void command(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        SessionProcesses processes = sessions.processes(owner(ctx), id); // an unknown session: 404 before the body
        CommandRequest body = bodies.read(ctx, CommandRequest.class);
        if (Boolean.TRUE.equals(body.background())) {
            ctx.status(201).json(processes.start(body));
            return;
        }
        String stream = StreamWriter.kind(ctx.header("Accept"));
        if (stream == null) {
            ctx.json(sessions.command(owner(ctx), id, body));
            return;
        }
        ctx.status(200).contentType(StreamWriter.contentType(stream)).header("Cache-Control", "no-cache");
        StreamWriter writer = new StreamWriter(ctx.res().getOutputStream(), "sse".equals(stream), json);
        // the command's output comes on its supervisor's reader thread, which must never wait for this client: it
        // goes through a bounded queue that this request's thread writes out (past the bound, the stream skips)
        OutputQueue queue = new OutputQueue(STREAM_QUEUE_BYTES);
        String owner = owner(ctx);
        CompletableFuture<CommandResult> run = new CompletableFuture<>();
        Thread.ofVirtual().name("crucible-command-stream").start(() -> {
            try {
                run.complete(sessions.command(owner, id, body, queue));
            } catch (Throwable e) {
                run.completeExceptionally(e);
            } finally {
                queue.close();
            }
        });
        queue.drainTo(writer);
        try {
            writer.result(run.join());
        } catch (CompletionException e) {
            if (!(e.getCause() instanceof RequestException refused)) {
                throw e;
            }
            if (!ctx.res().isCommitted()) { // refused before its first byte (a bad request): an error as JSON
                ctx.res().reset();
                throw refused;
            }
            writer.error(refused.code().wireName(), refused.getMessage()); // the stream began: the refusal ends it
        }
    }

    public void list(Context ctx) {
        ctx.json(Map.of("processes", sessions.processes(owner(ctx), ctx.pathParam("id")).list()));
    }

    public void get(Context ctx) {
        ctx.json(process(ctx).info());
    }

    /**
     * A background process's output from {@code ?from=} (0: the oldest kept). As JSON: what is there now (or within
     * {@code ?wait_ms=}, a long poll), and the offset to ask from next. As a stream ({@code Accept}): every chunk as
     * it comes, then the process's info once it has ended.
     */
    public void output(Context ctx) throws Exception {
        BackgroundProcess process = process(ctx);
        long from = number(ctx, "from", 0, Long.MAX_VALUE);
        String stream = StreamWriter.kind(ctx.header("Accept"));
        if (stream == null) {
            long waitMs = number(ctx, "wait_ms", 0, MAX_WAIT_MS);
            BackgroundProcess.Output out = process.read(from, Supervisor.RING_BYTES, waitMs);
            ByteArrayOutputStream[] streams = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
            for (BackgroundProcess.Chunk c : out.chunks()) {
                streams[c.stderr() ? 1 : 0].writeBytes(c.bytes());
            }
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("pid", process.pid());
            answer.put("from", from + out.missed());
            answer.put("next", out.next());
            answer.put("missed_bytes", out.missed());
            answer.put("stdout", streams[0].toString(StandardCharsets.UTF_8));
            answer.put("stderr", streams[1].toString(StandardCharsets.UTF_8));
            answer.put("ended", out.ended());
            answer.put("process", process.info());
            ctx.json(answer);
            return;
        }
        ctx.status(200).contentType(StreamWriter.contentType(stream)).header("Cache-Control", "no-cache");
        StreamWriter writer = new StreamWriter(ctx.res().getOutputStream(), "sse".equals(stream), json);
        long next = from;
        while (!writer.broken()) {
            BackgroundProcess.Output out = process.read(next, CHUNK, HEARTBEAT_MS);
            if (out.missed() > 0) {
                writer.dropped(out.missed());
            }
            for (BackgroundProcess.Chunk c : out.chunks()) {
                writer.chunk(c.stderr(), c.bytes(), c.bytes().length, c.offset() + c.bytes().length);
            }
            if (out.ended()) {
                writer.result(process.info());
                return;
            }
            if (out.chunks().isEmpty()) {
                writer.heartbeat();
            }
            next = out.next();
        }
    }

    /** {@code {"data": "text", "close": false}}: written to the process's stdin (then closed when asked). */
    public void stdin(Context ctx) throws Exception {
        BackgroundProcess process = process(ctx);
        StdinBody body = bodies.read(ctx, StdinBody.class);
        boolean close = Boolean.TRUE.equals(body.close());
        long written = sessions.processes(owner(ctx), ctx.pathParam("id")).write(process.pid(), body.data(), close);
        ctx.json(JsonObject.of("pid", process.pid(), "written", written, "closed", close));
    }

    /** {@code {"rows": 40, "cols": 120}}: the size of the process's terminal (it gets SIGWINCH). */
    public void resize(Context ctx) throws Exception {
        BackgroundProcess process = process(ctx);
        Terminal size = bodies.read(ctx, Terminal.class);
        boolean sized = sessions.processes(owner(ctx), ctx.pathParam("id")).resize(process.pid(), size);
        ctx.json(JsonObject.of("pid", process.pid(), "resized", sized));
    }

    /** {@code {"signal": "TERM", "group": true}}: to the process, or (the default) its whole process group. */
    public void signal(Context ctx) throws Exception {
        BackgroundProcess process = process(ctx);
        SignalBody body = ctx.req().getContentLengthLong() == 0 ? new SignalBody(null, null)
                : bodies.read(ctx, SignalBody.class);
        boolean sent = sessions.processes(owner(ctx), ctx.pathParam("id")).signal(process.pid(), body.signal(),
                !Boolean.FALSE.equals(body.group()));
        ctx.json(JsonObject.of("pid", process.pid(), "signalled", sent));
    }

    private BackgroundProcess process(Context ctx) {
        SessionProcesses processes = sessions.processes(owner(ctx), ctx.pathParam("id"));
        String pid = ctx.pathParam("pid");
        try {
            return processes.get(Long.parseLong(pid));
        } catch (NumberFormatException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a process is named by its pid (a number), not "
                    + pid);
        }
    }

    private static long number(Context ctx, String name, long min, long max) {
        String value = ctx.queryParam(name);
        if (value == null) {
            return min;
        }
        try {
            long n = Long.parseLong(value);
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new RequestException(ErrorCode.INVALID_REQUEST, name + " must be a number from " + min + " to " + max
                + ", not " + value);
    }
}
