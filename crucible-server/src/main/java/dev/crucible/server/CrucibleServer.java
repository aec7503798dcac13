package dev.crucible.server;

import dev.crucible.Crucible;
import dev.crucible.ErrorCode;
import dev.crucible.RequestException;
import dev.crucible.eval.Judge;
import dev.crucible.eval.Reward;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.session.SessionManager;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import io.javalin.json.JavalinJackson3;
import io.micrometer.core.instrument.Gauge;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The HTTP service: the stateless execute API, runtimes, health, metrics and the OpenAPI document, with bearer
 * auth, request caps, back-pressure and graceful shutdown. Routes run on virtual threads.
 *
 * <pre>{@code
 * try (Crucible engine = Crucible.start(SandboxConfig.defaults(), null);
 *      CrucibleServer server = CrucibleServer.start(ServerConfig.defaults().withPort(0), engine)) {
 *     System.out.println("listening on " + server.port());
 * }
 * }</pre>
 */
public final class CrucibleServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.server");
    static final String OPENAPI_RESOURCE = "openapi.json";

    /** Every route served, as "METHOD path"; the OpenAPI document must list exactly these (a test checks). */
    public static final List<String> ROUTES = List.of(
            "POST /v1/execute", "GET /v1/runtimes", "GET /healthz", "GET /metrics", "GET /openapi.json",
            "POST /v1/sessions", "GET /v1/sessions", "GET /v1/sessions/{id}", "DELETE /v1/sessions/{id}",
            "POST /v1/sessions/{id}/execute", "POST /v1/sessions/{id}/interrupt", "POST /v1/sessions/{id}/restart",
            "GET /v1/sessions/{id}/files", "GET /v1/sessions/{id}/files/{path}", "PUT /v1/sessions/{id}/files/{path}",
            "DELETE /v1/sessions/{id}/files/{path}", "POST /v1/evaluate", "POST /v1/reward", "POST /v1/reward/batch",
            "GET /api/v2/runtimes", "POST /api/v2/execute", "POST /run_code", "POST /replit/eval",
            "GET /v1/tools", "POST /v1/tools/call");

    private final ServerConfig config;
    private final Crucible engine;
    private final Executor executor;
    private final Auth auth;
    private final BrowserGuard guard;
    private final Admission admission;
    private final Metrics metrics;
    private final JsonMapper json;
    private final byte[] openapi;
    private final SessionManager sessions;
    private final SessionRoutes sessionRoutes;
    private final Judge judge;
    private final Reward reward;
    private final ToolDispatcher tools;
    private final long startedNanos = System.nanoTime();
    private Javalin app;
    private McpEndpoint.Http mcp;

    private CrucibleServer(ServerConfig config, Crucible engine) throws IOException {
        this.config = config;
        this.engine = engine;
        this.executor = engine.executor();
        this.auth = new Auth(config.tokens());
        this.guard = new BrowserGuard(config.host(), config.loopback());
        this.admission = new Admission(config.maxConcurrent(), config.maxQueued());
        this.metrics = new Metrics(admission, executor);
        this.json = JsonMapper.builder().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
        try (InputStream in = CrucibleServer.class.getResourceAsStream(OPENAPI_RESOURCE)) {
            this.openapi = in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("openapi.json is missing from the JAR", e);
        }
        this.sessions = SessionManager.start(engine.sandbox(), engine.runtimes(), config.sessions());
        this.sessionRoutes = new SessionRoutes(sessions, auth, this::body, metrics);
        this.judge = new Judge(executor);
        this.reward = new Reward(executor);
        this.tools = new ToolDispatcher(executor, sessions, this::admitted, json);
        Gauge.builder("crucible_sessions", sessions, SessionManager::size).description("sessions kept")
                .register(metrics.registry);
    }

    /**
     * Starts the warm pool (when the config asks for one) and serves.
     *
     * @throws IllegalArgumentException when asked to bind a non-loopback address without any token
     */
    public static CrucibleServer start(ServerConfig config, Crucible engine) {
        if (!config.loopback() && config.tokens().isEmpty()) {
            throw new IllegalArgumentException("refusing to listen on " + config.host()
                    + " without a token: set CRUCIBLE_TOKENS (comma-separated bearer tokens) or bind 127.0.0.1");
        }
        CrucibleServer server;
        try {
            server = new CrucibleServer(config, engine);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot use the data directory " + config.sessions().dataDir() + ": "
                    + e.getMessage(), e);
        }
        if (!config.pool().isEmpty()) {
            engine.startPool(config.pool());
        }
        server.app = Javalin.create(cfg -> {
            cfg.concurrency.useVirtualThreads = true;
            cfg.jsonMapper(new JavalinJackson3(server.json, true));
            cfg.http.maxRequestSize = config.maxBodyBytes() + 1;
            cfg.http.prefer405over404 = true;
            cfg.startup.showJavalinBanner = false;
            cfg.jetty.modifyServer(jetty -> {
                jetty.setStopAtShutdown(false); // close() stops it, once
                jetty.setErrorHandler(new JettyErrorHandler(server.json));
            });
            cfg.routes.post("/v1/execute", server.route("/v1/execute", true, server::execute));
            cfg.routes.get("/v1/runtimes", server.route("/v1/runtimes", true, server::runtimes));
            cfg.routes.get("/healthz", server.route("/healthz", false, server::health));
            cfg.routes.get("/metrics", server.route("/metrics", true,
                    ctx -> ctx.contentType("text/plain; version=0.0.4; charset=utf-8").result(server.metrics.scrape())));
            cfg.routes.get("/openapi.json", server.route("/openapi.json", false,
                    ctx -> ctx.contentType("application/json").result(server.openapi)));
            cfg.routes.post("/v1/evaluate", server.route("/v1/evaluate", true, server::evaluate));
            cfg.routes.post("/v1/reward", server.route("/v1/reward", true, server::reward));
            cfg.routes.post("/v1/reward/batch", server.route("/v1/reward/batch", true, server::rewardBatch));
            CompatRoutes compat = new CompatRoutes(server.executor, server.json, server::bodyBytes);
            cfg.routes.get("/api/v2/runtimes", server.route("/api/v2/runtimes", true, compat::pistonRuntimes));
            cfg.routes.post("/api/v2/execute", server.route("/api/v2/execute", true, compat::pistonExecute));
            cfg.routes.post("/run_code", server.route("/run_code", true, compat::runCode));
            cfg.routes.post("/replit/eval", server.route("/replit/eval", true, compat::replitEval));
            cfg.routes.get("/v1/tools", server.route("/v1/tools", true, server::toolSchemas));
            cfg.routes.post("/v1/tools/call", server.route("/v1/tools/call", true, server::toolCall));
            server.mcp = McpEndpoint.http(server.tools, server.sessions, server.json, server.auth,
                    McpEndpoint.Allowed.of(config.host(), config.loopback()));
            cfg.jetty.modifyServletContextHandler(handler -> {
                var holder = new org.eclipse.jetty.ee10.servlet.ServletHolder(server.mcp.servlet());
                holder.setAsyncSupported(true);
                handler.addServlet(holder, McpEndpoint.PATH);
                handler.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(McpEndpoint.authFilter(server.auth, server.json)),
                        McpEndpoint.PATH, java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
            });
            SessionRoutes s = server.sessionRoutes;
            cfg.routes.post("/v1/sessions", server.route("/v1/sessions", true, s::create));
            cfg.routes.get("/v1/sessions", server.route("/v1/sessions", true, s::list));
            cfg.routes.get("/v1/sessions/{id}", server.route("/v1/sessions/{id}", true, s::get));
            cfg.routes.delete("/v1/sessions/{id}", server.route("/v1/sessions/{id}", true, s::delete));
            cfg.routes.post("/v1/sessions/{id}/execute", server.route("/v1/sessions/{id}/execute", true, s::execute));
            cfg.routes.post("/v1/sessions/{id}/interrupt", server.route("/v1/sessions/{id}/interrupt", true,
                    s::interrupt));
            cfg.routes.post("/v1/sessions/{id}/restart", server.route("/v1/sessions/{id}/restart", true, s::restart));
            cfg.routes.get("/v1/sessions/{id}/files", server.route("/v1/sessions/{id}/files", true, s::listFiles));
            cfg.routes.get("/v1/sessions/{id}/files/<path>", server.route("/v1/sessions/{id}/files/{path}", true,
                    s::download));
            cfg.routes.put("/v1/sessions/{id}/files/<path>", server.route("/v1/sessions/{id}/files/{path}", true,
                    s::upload));
            cfg.routes.delete("/v1/sessions/{id}/files/<path>", server.route("/v1/sessions/{id}/files/{path}", true,
                    s::deleteFile));
            cfg.routes.error(404, ctx -> server.fallback(ctx, ErrorCode.NOT_FOUND, "no such route: " + ctx.method()
                    + " " + ctx.path()));
            cfg.routes.error(405, ctx -> server.fallback(ctx, ErrorCode.METHOD_NOT_ALLOWED, ctx.method()
                    + " is not allowed on " + ctx.path()));
        }).start(config.host(), config.port());
        return server;
    }

    public int port() {
        return app.port();
    }

    /** Milliseconds from construction to now; the CLI reports start-up time with it. */
    public long uptimeMillis() {
        return Duration.ofNanos(System.nanoTime() - startedNanos).toMillis();
    }

    /** Wraps a handler: auth, errors as JSON, metrics. No user input ever yields a 500. */
    private Handler route(String name, boolean authenticated, Handler handler) {
        return ctx -> {
            long start = System.nanoTime();
            try {
                guard.check(ctx); // before the token: a rebinding page has none, but must not even learn that
                if (authenticated) {
                    auth.check(ctx.header("Authorization"));
                }
                handler.handle(ctx);
            } catch (RequestException e) {
                error(ctx, e.code(), e.getMessage());
            } catch (JacksonException e) {
                error(ctx, ErrorCode.INVALID_JSON, "the body is not valid JSON for this route: "
                        + oneLine(e.getOriginalMessage()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                error(ctx, ErrorCode.SHUTTING_DOWN, "the server is shutting down");
            } catch (Exception e) {
                LOG.log(System.Logger.Level.ERROR, "internal error on " + name, e);
                error(ctx, ErrorCode.INTERNAL, "internal error; see the server log");
            } finally {
                metrics.request(name, ctx.method().name(), ctx.statusCode(), System.nanoTime() - start);
            }
        };
    }

    private static String oneLine(String s) {
        String line = s == null ? "" : s.lines().findFirst().orElse("");
        return line.length() > 300 ? line.substring(0, 300) + "…" : line;
    }

    /** The answer to a refused request: the code's status, its {@code Retry-After} if it has one, the JSON error. */
    private void error(Context ctx, ErrorCode code, String message) {
        drainRefusedBody(ctx);
        if (code.retryAfterSeconds() > 0) {
            ctx.header("Retry-After", Integer.toString(code.retryAfterSeconds()));
        }
        ctx.status(code.httpStatus()).json(errorBody(ctx, code, message));
        ctx.attribute("crucible.error", Boolean.TRUE);
    }

    /** Ours, {@code {"error": {code, message}}}; on Piston's routes Piston's own {@code {"message": …}}. */
    private static Object errorBody(Context ctx, ErrorCode code, String message) {
        return ctx.path().startsWith("/api/v2/") ? Map.of("message", message) : ErrorBody.of(code, message);
    }

    /**
     * Reads and discards what a refused request still has to send, up to a bound, before the answer goes out: a
     * client that writes its whole body before reading (Python's requests and urllib, without {@code Expect:
     * 100-continue}) otherwise meets a closed socket and reports a connection reset instead of the JSON error —
     * nginx's lingering close. Past the bound (twice the body cap, at least 64 MiB) the connection is closed.
     */
    private void drainRefusedBody(Context ctx) {
        if (ctx.attribute("crucible.drained") != null) {
            return;
        }
        ctx.attribute("crucible.drained", Boolean.TRUE);
        long bound = Math.max(64L << 20, 2 * config.maxBodyBytes());
        try {
            InputStream in = ctx.req().getInputStream();
            byte[] sink = new byte[64 * 1024];
            for (long total = 0; total < bound; ) {
                int n = in.read(sink, 0, (int) Math.min(sink.length, bound - total));
                if (n < 0) {
                    return;
                }
                total += n;
            }
        } catch (IOException | RuntimeException e) {
            // the client went away, or the body cannot be read any more: nothing to linger for
        }
    }

    private void fallback(Context ctx, ErrorCode code, String message) {
        drainRefusedBody(ctx);
        if (ctx.attribute("crucible.error") == null) {
            ctx.status(code.httpStatus()).json(errorBody(ctx, code, message));
            metrics.request("unmatched", ctx.method().name(), code.httpStatus(), 0);
        }
    }

    /** Reads a JSON body with the size cap and the content type checked; nothing of it reaches a sandbox yet. */
    private <T> T body(Context ctx, Class<T> type) throws IOException {
        String contentType = ctx.header("Content-Type");
        if (contentType == null || !contentType.toLowerCase(Locale.ROOT).startsWith("application/json")) {
            throw new RequestException(ErrorCode.UNSUPPORTED_MEDIA_TYPE, "send the body as JSON with Content-Type: application/json");
        }
        byte[] bytes = bodyBytes(ctx);
        if (bytes.length == 0) {
            throw new RequestException(ErrorCode.INVALID_JSON, "the body is empty; send a JSON object");
        }
        T value = json.readValue(bytes, type);
        if (value == null) {
            throw new RequestException(ErrorCode.INVALID_JSON, "the body is JSON null; send a JSON object");
        }
        return value;
    }

    /** The raw body, refused with 413 past the cap (by its Content-Length first, then by what arrives). */
    byte[] bodyBytes(Context ctx) throws IOException {
        String length = ctx.header("Content-Length");
        if (length != null && length.matches("\\d{1,18}") && Long.parseLong(length) > config.maxBodyBytes()) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "the body is larger than " + config.maxBodyBytes() + " bytes");
        }
        byte[] bytes = ctx.req().getInputStream().readNBytes((int) Math.min(Integer.MAX_VALUE - 8, config.maxBodyBytes() + 1));
        if (bytes.length > config.maxBodyBytes()) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "the body is larger than " + config.maxBodyBytes() + " bytes");
        }
        return bytes;
    }

    private void execute(Context ctx) throws Exception {
        ExecuteRequest request = body(ctx, ExecuteRequest.class);
        // refused before any sandbox or turn is taken
        Executor.limitsFor(executor.runtimeFor(request.language()), request);
        if (request.code() == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
        }
        String accept = ctx.header("Accept") == null ? "" : ctx.header("Accept").toLowerCase(Locale.ROOT);
        boolean sse = accept.contains("text/event-stream");
        boolean ndjson = accept.contains("application/x-ndjson");
        try (AutoCloseable turn = admission.enter()) {
            if (sse || ndjson) {
                ctx.status(200).contentType(sse ? "text/event-stream; charset=utf-8" : "application/x-ndjson; charset=utf-8");
                ctx.header("Cache-Control", "no-cache");
                StreamWriter writer = new StreamWriter(ctx.res().getOutputStream(), sse, json);
                ExecuteResult result = executor.execute(request, writer);
                writer.result(result);
                metrics.verdict(result.status());
            } else {
                ExecuteResult result = executor.execute(request);
                metrics.verdict(result.status());
                ctx.json(result);
            }
        }
    }

    /** Judging: each case takes its own turn at the sandbox (the admission counts runs, not requests). */
    private void evaluate(Context ctx) throws Exception {
        Judge.Request request = body(ctx, Judge.Request.class);
        ctx.json(judge.evaluate(request));
    }

    private void reward(Context ctx) throws Exception {
        ctx.json(reward.score(body(ctx, Reward.Request.class)));
    }

    /** {@code {items: [reward request, …]}} → {@code {results: [...], mean_score}}, scored in parallel. */
    private void rewardBatch(Context ctx) throws Exception {
        record Batch(@com.fasterxml.jackson.annotation.JsonProperty("items") List<Reward.Request> items) {}
        List<Reward.Result> results = reward.scoreAll(body(ctx, Batch.class).items());
        ctx.json(Map.of("results", results, "mean_score",
                results.stream().mapToDouble(Reward.Result::score).average().orElse(0)));
    }

    /** One stateless run with a turn of the admission, as {@code /v1/execute} takes it. */
    private ExecuteResult admitted(ExecuteRequest request) throws Exception {
        try (AutoCloseable turn = admission.enter()) {
            ExecuteResult result = executor.execute(request);
            metrics.verdict(result.status());
            return result;
        }
    }

    /** {@code ?format=openai|openai-functions|anthropic|mcp&set=stateless|session|all}: the tools for a model. */
    private void toolSchemas(Context ctx) {
        String format = ctx.queryParam("format") == null ? "openai" : ctx.queryParam("format");
        String set = ctx.queryParam("set") == null ? "all" : ctx.queryParam("set");
        try {
            ctx.json(dev.crucible.client.Tools.render(dev.crucible.client.Tools.of(
                    dev.crucible.client.Tools.Set.parse(set), tools.languages()), format));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
    }

    /**
     * {@code {name, arguments, session_id?}} → {@code {content: [{type, text | mime_type + data}], is_error, result?}}.
     * The model's mistakes are answers with {@code is_error: true}; only a body without a tool name is a 400.
     */
    private void toolCall(Context ctx) throws Exception {
        record Call(@com.fasterxml.jackson.annotation.JsonProperty("name") String name,
                @com.fasterxml.jackson.annotation.JsonProperty("arguments") tools.jackson.databind.JsonNode arguments,
                @com.fasterxml.jackson.annotation.JsonProperty("session_id") String sessionId) {}
        Call call = body(ctx, Call.class);
        if (call.name() == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "name is required: the tool the model called");
        }
        String owner = auth.owner(ctx.header("Authorization"));
        dev.crucible.client.ToolOutcome outcome = tools.call(owner, call.name(), call.arguments(),
                o -> call.sessionId() == null || call.sessionId().isBlank() ? null : call.sessionId());
        List<Map<String, Object>> content = new java.util.ArrayList<>();
        for (dev.crucible.client.ToolOutcome.Content c : outcome.content()) {
            content.add("image".equals(c.type()) ? Map.of("type", "image", "mime_type", c.mimeType(), "data", c.data())
                    : Map.of("type", "text", "text", c.text()));
        }
        Map<String, Object> answer = new java.util.LinkedHashMap<>();
        answer.put("content", content);
        answer.put("is_error", outcome.isError());
        if (outcome.result() != null) {
            answer.put("result", outcome.result());
        }
        ctx.json(answer);
    }

    private void runtimes(Context ctx) {
        ctx.json(executor.runtimes().list().stream().map(RuntimeInfo::of).toList());
    }

    private void health(Context ctx) {
        ctx.json(Map.of("status", "ok", "running", admission.running(), "queued", admission.queued(),
                "pool_ready", executor.pool() == null ? 0 : executor.pool().size(), "rss_bytes", rssBytes(),
                "uptime_ms", uptimeMillis()));
    }

    /** This process's resident memory, from /proc/self/status, or -1. */
    static long rssBytes() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux
        }
        return -1;
    }

    /**
     * Graceful shutdown: new requests get 503, running executions get {@link ServerConfig#shutdownGrace()} to finish,
     * the rest are killed (their callers get the killed result), then the server and the engine stop.
     */
    @Override
    public void close() {
        admission.close();
        boolean busy = admission.running() > 0 || admission.queued() > 0;
        long deadline = System.nanoTime() + config.shutdownGrace().toNanos();
        try {
            while ((admission.running() > 0 || admission.queued() > 0) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            if (admission.running() > 0) {
                LOG.log(System.Logger.Level.WARNING, "killing " + admission.running() + " runs at shutdown");
                engine.sandbox().killRunning();
                long killDeadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                while (admission.running() > 0 && System.nanoTime() < killDeadline) {
                    Thread.sleep(10);
                }
            }
            if (busy) {
                Thread.sleep(200); // the last answers leave the handlers before Jetty has written them
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        mcp.server().closeGracefully(); // MCP clients' open streams end before Jetty stops
        app.stop();
        sessions.close(); // the interpreters end; the sessions' files stay for the next start
    }
}
