package dev.crucible.server;

import dev.crucible.Crucible;
import dev.crucible.egress.Egress;
import dev.crucible.egress.proxy.EgressLimits;
import dev.crucible.egress.proxy.EgressResolver;
import dev.crucible.server.access.Admission;
import dev.crucible.server.access.Auth;
import dev.crucible.server.access.BrowserGuard;
import dev.crucible.server.api.ApiRoutes;
import dev.crucible.server.cluster.Peers;
import dev.crucible.server.cluster.SessionRouter;
import dev.crucible.server.compat.CompatRoutes;
import dev.crucible.server.desktop.DesktopRoutes;
import dev.crucible.server.e2b.E2bApi;
import dev.crucible.server.evaluations.EvaluationRoutes;
import dev.crucible.server.http.AcceptQueue;
import dev.crucible.server.http.Bodies;
import dev.crucible.server.http.JsonObject;
import dev.crucible.server.mcp.McpEndpoint;
import dev.crucible.server.mcp.McpHttp;
import dev.crucible.server.ports.PortRoutes;
import dev.crucible.server.ports.PreviewListener;
import dev.crucible.server.ports.PreviewTokens;
import dev.crucible.server.ports.UpgradePassThrough;
import dev.crucible.server.services.Services;
import dev.crucible.server.session.ProcessRoutes;
import dev.crucible.server.session.SessionRoutes;
import dev.crucible.server.session.TerminalSocket;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.json.JavalinJackson3;
import jakarta.servlet.DispatcherType;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpClient;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletHolder;

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
    /** How long runs killed at shutdown may take to end. */
    private static final Duration KILL_WAIT = Duration.ofSeconds(5);

    private final ServerConfig config;
    private final Services services;
    private final boolean ownsServices;
    private final Auth auth;
    private final BrowserGuard guard;
    private TerminalSocket terminal;
    /** Speaks to the other replicas: forwarded session requests and their health. */
    private final HttpClient forwarding = SessionRouter.client();
    /** The other replicas; {@link Peers#conflict()} says when one answers to this replica's name. */
    private final Peers peers;
    private final Bodies bodies;
    private final byte[] openapi;
    private final Health health;
    private final PreviewTokens previews;
    private final long startedNanos = System.nanoTime();
    private List<Route> routes;
    private Javalin app;
    /** The listener of previews' own ({@link ServerConfig#previewListen()}); null when there is none. */
    private PreviewListener previewListener;
    private McpHttp mcp;
    private E2bApi e2b;

    private CrucibleServer(ServerConfig config, Services services, boolean ownsServices) {
        this.config = config;
        this.services = services;
        this.ownsServices = ownsServices;
        this.auth = new Auth(config.tokens());
        this.guard = new BrowserGuard(config.host(), config.loopback(), config.allowedOrigins());
        this.peers = new Peers(config.cluster().peers(), config.cluster().replica(), forwarding, services.json());
        this.bodies = new Bodies(services.json(), config.maxBodyBytes());
        this.health = new Health(services, peers::conflict, config.cluster().replicated() ? config.cluster().replica()
                : null);
        try {
            this.previews = PreviewTokens.in(config.sessions().dataDir());
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot keep the preview links' key in the data directory "
                    + config.sessions().dataDir() + ": " + e.getMessage(), e);
        }
        try (InputStream in = CrucibleServer.class.getResourceAsStream(OPENAPI_RESOURCE)) {
            this.openapi = in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("openapi.json is missing from the JAR", e);
        }
    }

    /**
     * Starts the services on {@code engine} with the config's sessions and admission, then serves; closing the server
     * closes those services (the engine stays its caller's).
     *
     * @throws IllegalArgumentException when asked to bind a non-loopback address (the API's or the previews') without
     *     any token, or when the data directory cannot be used
     */
    public static CrucibleServer start(ServerConfig config, Crucible engine) {
        return start(config, engine, EgressResolver.system());
    }

    /** As {@link #start(ServerConfig, Crucible)}, egress names resolved by {@code resolver} (tests stage DNS with it). */
    public static CrucibleServer start(ServerConfig config, Crucible engine, EgressResolver resolver) {
        refuseOpenWithoutToken(config);
        useEgress(config, engine, resolver);
        Services services;
        try {
            services = Services.start(engine, config.sessions(), config.turns(), config.cluster().replica());
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot use the data directory " + config.sessions().dataDir() + ": "
                    + e.getMessage(), e);
        }
        return start(config, services, true);
    }

    /**
     * Serves {@code services} (started by the caller, who closes them after the server), starting the warm pool when
     * the config asks for one.
     *
     * @throws IllegalArgumentException when asked to bind a non-loopback address without any token
     */
    public static CrucibleServer start(ServerConfig config, Services services) {
        refuseOpenWithoutToken(config);
        return start(config, services, false);
    }

    /**
     * Hands the operator's egress list to the engine (every start sets it: none refuses every request for network).
     *
     * @throws IllegalArgumentException when a list is given and this host cannot give sandboxes egress
     */
    private static void useEgress(ServerConfig config, Crucible engine, EgressResolver resolver) {
        if (!config.egress().isNone() && engine.sandbox().egressUnavailable() != null) {
            throw new IllegalArgumentException("cannot allow egress: " + engine.sandbox().egressUnavailable());
        }
        engine.executor().useEgress(Egress.of(config.egress(), resolver, EgressLimits.defaults(), InstantSource.system()));
        config.egress().loopbackWarnings().forEach(w -> LOG.log(System.Logger.Level.WARNING, w));
    }

    private static void refuseOpenWithoutToken(ServerConfig config) {
        if (config.openWithoutToken() != null) {
            throw new IllegalArgumentException(config.openWithoutToken());
        }
    }

    private static CrucibleServer start(ServerConfig config, Services services, boolean ownsServices) {
        CrucibleServer server = new CrucibleServer(config, services, ownsServices);
        if (!config.pool().isEmpty()) {
            services.engine().startPool(config.pool());
        }
        if (config.previewAddress() != null) { // first: the links the API makes name its port
            server.previewListener = PreviewListener.start(config.previewAddress(), config.previewDomain(),
                    server.previews, services.sessions(), services.json(), new JettyErrorHandler(services.json()),
                    InstantSource.system(), server::trafficCurrent);
        }
        try {
            serveApi(server, config, services);
        } catch (RuntimeException e) {
            if (server.previewListener != null) {
                server.previewListener.close();
            }
            throw e;
        }
        server.peers.start(); // in the background: a peer that does not answer never delays start-up
        return server;
    }

    private static void serveApi(CrucibleServer server, ServerConfig config, Services services) {
        server.mcp = McpHttp.startInBackground(services.tools(), services.sessions(), services.json(), server.auth);
        server.routes = server.routeTable();
        server.app = Javalin.create(cfg -> {
            cfg.concurrency.useVirtualThreads = true;
            cfg.jsonMapper(new JavalinJackson3(services.json(), true));
            cfg.http.maxRequestSize = config.maxBodyBytes() + 1;
            cfg.http.prefer405over404 = true;
            cfg.startup.showJavalinBanner = false;
            cfg.jetty.modifyServer(jetty -> {
                jetty.setStopAtShutdown(false); // close() stops it, once
                jetty.setErrorHandler(new JettyErrorHandler(services.json()));
                AcceptQueue.deepen(jetty); // a burst of connections is queued, not reset
            });
            server.routes.forEach(route -> cfg.routes.addEndpoint(route.endpoint()));
            cfg.routes.beforeMatched(server::admit);
            server.terminal.install(cfg.routes);
            new ErrorMapping(server.bodies).install(cfg.routes);
            cfg.requestLogger.http((ctx, ms) -> {
                Route route = Route.of(ctx);
                services.metrics().request(route == null ? "unmatched" : route.path(), ctx.method().name(),
                        ctx.statusCode(), (long) (ms * 1_000_000));
            });
            server.e2b = E2bApi.start(server.auth, server.guard, server.previews, services.json(), services.sessions(),
                    services.engine().runtimes(), config.sessions(), config.e2bTemplates(),
                    server.previewListener == null ? null : config.previewDomain() + ":" + server.previewListener.port());
            server.e2b.countWith(services.metrics()::request); // E2B calls in /metrics, and forwarded, as every route
            server.e2b.forwardWith(new SessionRouter(services.sessions(), server.peers, server.forwarding)::forwarded);
            cfg.jetty.modifyServletContextHandler(handler -> {
                var holder = new ServletHolder(server.mcp.servlet());
                holder.setAsyncSupported(true);
                handler.addServlet(holder, McpEndpoint.PATH);
                handler.addFilter(new FilterHolder(McpEndpoint.filter(server.guard,
                        server.auth, services.json())), McpEndpoint.PATH,
                        EnumSet.of(DispatcherType.REQUEST));
                handler.addFilter(new FilterHolder(new UpgradePassThrough()), "/*",
                        EnumSet.of(DispatcherType.REQUEST));
                handler.addFilter(new FilterHolder(server.e2b), "/*",
                        EnumSet.of(DispatcherType.REQUEST));
            });
        }).start(config.host(), config.port());
    }

    /** Whether a traffic token's grant is of a live E2B sandbox's current nonce (E2B's planes start after the routes). */
    private boolean trafficCurrent(PreviewTokens.Grant grant) {
        return e2b != null && e2b.trafficCurrent(grant);
    }

    /** Every route served; the OpenAPI document lists exactly these (a test checks). */
    private List<Route> routeTable() {
        ApiRoutes api = new ApiRoutes(services, bodies, auth);
        SessionRoutes s = new SessionRoutes(services.sessions(), auth, bodies::read, services.metrics());
        ProcessRoutes p = new ProcessRoutes(services.sessions(), auth, bodies::read, services.json());
        terminal = new TerminalSocket(services.sessions(), auth, guard);
        SessionRouter router = new SessionRouter(services.sessions(), peers, forwarding);
        CompatRoutes compat = new CompatRoutes(services.executor(), services.json(), bodies::bytes,
                (ctx, request) -> services.admission().enter(auth.owner(ctx.header("Authorization")),
                        Services.turnTimeout(request)));
        EvaluationRoutes evals = new EvaluationRoutes(services.evaluations(), auth, bodies);
        DesktopRoutes desktop = new DesktopRoutes(services.sessions(), auth, bodies::read);
        PortRoutes ports = new PortRoutes(services.sessions(), auth, bodies::read, previews, InstantSource.system(),
                previewListener, this::trafficCurrent);
        Route.Access token = Route.Access.TOKEN;
        List<Route> proxied = new ArrayList<>();
        for (String path : List.of("/v1/sessions/{id}/ports/{port}", "/v1/sessions/{id}/ports/{port}/{path}")) {
            proxied.addAll(Route.each(PortRoutes.METHODS, path, Route.Access.PORT, router.here(ports::proxy)));
        }
        for (String path : List.of("/v1/previews/{token}", "/v1/previews/{token}/{path}")) {
            proxied.addAll(Route.each(PortRoutes.METHODS, path, Route.Access.PREVIEW, ports::preview));
        }
        proxied.addAll(ConsoleRoutes.routes());
        return Stream.concat(proxied.stream(), Stream.of(
                Route.post("/v1/execute", token, api::execute),
                Route.get("/v1/runtimes", token, api::runtimes),
                Route.get("/healthz", Route.Access.PUBLIC, this::health),
                Route.get("/readyz", Route.Access.PUBLIC, health::ready),
                Route.get("/livez", Route.Access.PUBLIC, health::live),
                Route.get("/metrics", token, ctx -> ctx.contentType("text/plain; version=0.0.4; charset=utf-8")
                        .result(services.metrics().scrape(health.readiness().parts()))),
                Route.get("/openapi.json", Route.Access.PUBLIC, ctx -> ctx.contentType("application/json").result(openapi)),
                Route.post("/v1/sessions", token, router.here(s::create)),
                Route.get("/v1/sessions", token, router.here(s::list)),
                Route.get("/v1/sessions/{id}", token, router.owned(s::get)),
                Route.delete("/v1/sessions/{id}", token, router.owned(s::delete)),
                Route.post("/v1/sessions/{id}/execute", token, router.owned(s::execute)),
                Route.post("/v1/sessions/{id}/interrupt", token, router.owned(s::interrupt)),
                Route.post("/v1/sessions/{id}/commands", token, router.owned(p::command)),
                Route.get("/v1/sessions/{id}/processes", token, router.owned(p::list)),
                Route.get("/v1/sessions/{id}/processes/{pid}", token, router.owned(p::get)),
                Route.get("/v1/sessions/{id}/processes/{pid}/output", token, router.owned(p::output)),
                Route.post("/v1/sessions/{id}/processes/{pid}/stdin", token, router.owned(p::stdin)),
                Route.post("/v1/sessions/{id}/processes/{pid}/signal", token, router.owned(p::signal)),
                Route.post("/v1/sessions/{id}/processes/{pid}/resize", token, router.owned(p::resize)),
                Route.get(TerminalSocket.PATH, token, terminal::plain),
                Route.post("/v1/sessions/{id}/restart", token, router.owned(s::restart)),
                Route.post("/v1/sessions/{id}/pause", token, router.owned(s::pause)),
                Route.post("/v1/sessions/{id}/resume", token, router.owned(s::resume)),
                Route.post("/v1/sessions/{id}/fork", token, router.owned(s::fork)),
                Route.post("/v1/sessions/{id}/snapshots", token, router.owned(s::snapshot)),
                Route.post("/v1/sessions/{id}/commit", token, router.owned(s::commit)),
                Route.get("/v1/snapshots", token, router.here(s::listSnapshots)),
                Route.delete("/v1/snapshots/{name}", token, router.here(s::deleteSnapshot)),
                Route.post("/v1/sessions/{id}/network", token, router.owned(s::network)),
                Route.get("/v1/sessions/{id}/files", token, router.owned(s::listFiles)),
                Route.put("/v1/sessions/{id}/files", token, router.owned(s::upload)),
                Route.delete("/v1/sessions/{id}/files", token, router.owned(s::deleteFile)),
                Route.get("/v1/sessions/{id}/files/{path}", token, router.owned(s::download)),
                Route.put("/v1/sessions/{id}/files/{path}", token, router.owned(s::upload)),
                Route.delete("/v1/sessions/{id}/files/{path}", token, router.owned(s::deleteFile)),
                Route.post("/v1/evaluate", token, api::evaluate),
                Route.post("/v1/evaluations", token, evals::start),
                Route.get("/v1/evaluations", token, evals::list),
                Route.get("/v1/evaluations/{id}", token, evals::get),
                Route.get("/v1/evaluations/{id}/results", token, evals::results),
                Route.delete("/v1/evaluations/{id}", token, evals::delete),
                Route.post("/v1/reward", token, api::reward),
                Route.post("/v1/reward/batch", token, api::rewardBatch),
                Route.get("/api/v2/runtimes", token, compat::pistonRuntimes),
                Route.post("/api/v2/execute", token, compat::pistonExecute),
                Route.post("/run_code", token, compat::runCode),
                Route.post("/replit/eval", token, compat::replitEval),
                Route.get("/v1/tools", token, api::toolSchemas),
                Route.post("/v1/tools/call", token, api::toolCall),
                Route.get("/v1/sessions/{id}/ports", token, router.owned(ports::list)),
                Route.post("/v1/sessions/{id}/previews", token, router.owned(ports::createPreview)),
                Route.post("/v1/sessions/{id}/desktop", token, router.owned(desktop::start)),
                Route.post("/v1/sessions/{id}/desktop/screenshot", token, router.owned(desktop::screenshot)),
                Route.post("/v1/sessions/{id}/desktop/actions", token, router.owned(desktop::actions)))).toList();
    }

    /** The routes served, as {@code "METHOD path"} in the OpenAPI document's syntax. */
    public List<String> routes() {
        return routes.stream().map(Route::key).toList();
    }

    /** Before any matched handler: the browser guard, then the token when the route asks for one. */
    private void admit(Context ctx) {
        Route.Access access = Route.of(ctx).access();
        if (access == Route.Access.PREVIEW || access == Route.Access.PORT) {
            guard.checkHostAndOrigin(ctx.header("Host"), access == Route.Access.PORT ? ctx.header("Origin") : null,
                    ctx.req().getLocalPort());
            if (access == Route.Access.PORT) {
                auth.check(ctx.header("Authorization"));
            }
            return;
        }
        guard.check(ctx); // before the token: a rebinding page has none, but must not even learn that
        if (Route.of(ctx).access() == Route.Access.TOKEN) {
            auth.check(ctx.header("Authorization"));
        }
    }

    public int port() {
        return app.port();
    }

    /** The port of the listener of previews' own (the one bound, when asked for port 0); -1 when there is none. */
    public int previewPort() {
        return previewListener == null ? -1 : previewListener.port();
    }

    /** The services it serves: what runs beside it ({@code serve --agent-sandbox}) runs on the same sessions. */
    public Services services() {
        return services;
    }

    /** Milliseconds from construction to now; the CLI reports start-up time with it. */
    public long uptimeMillis() {
        return Duration.ofNanos(System.nanoTime() - startedNanos).toMillis();
    }

    /**
     * Readiness as today's clients read it: {@code status} ok, draining or not_ready (503 unless ok), the turns, the
     * pool, the replica's name; and each part's state.
     */
    private void health(Context ctx) {
        Admission admission = services.admission();
        Health.Readiness readiness = health.readiness();
        // not ready while draining: a balancer's readiness check takes this replica out before its last runs end
        ctx.status(readiness.ready() ? 200 : 503);
        Map<String, Object> body = new LinkedHashMap<>(JsonObject.of("status",
                admission.closed() ? "draining" : readiness.ready() ? "ok" : "not_ready", "running", admission.running(),
                "queued", admission.queued(), "max_running", admission.maxRunning(), "max_queued", admission.maxQueued(),
                "pool_ready", services.executor().pool() == null ? 0 : services.executor().pool().size(),
                "rss_bytes", Health.rssBytes(), "uptime_ms", uptimeMillis()));
        if (config.cluster().replicated()) {
            body.put("replica", config.cluster().replica()); // how peers learn which replica answers where
            body.put("instance", peers.instance()); // and whether it is this process or another of the same name
        }
        if (readiness.why() != null) {
            body.put("reason", readiness.why());
        }
        body.put("queues", health.queues());
        body.put("parts", readiness.parts());
        ctx.json(body);
    }

    /**
     * Graceful shutdown: new requests get 503, running executions get {@link ServerConfig#shutdownGrace()} to finish,
     * the rest are killed (their callers get the killed result), then the server and the engine stop.
     */
    @Override
    public void close() {
        Admission admission = services.admission();
        admission.close();
        boolean busy = admission.busy();
        try {
            if (!admission.awaitDrained(config.shutdownGrace()) && admission.running() > 0) {
                LOG.log(System.Logger.Level.WARNING, "killing " + admission.running() + " runs at shutdown");
                services.engine().sandbox().killRunning();
                admission.awaitDrained(KILL_WAIT);
            }
            if (busy) {
                Thread.sleep(200); // the last answers leave the handlers before Jetty has written them
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        peers.close();
        mcp.close(); // MCP clients' open streams end before Jetty stops
        app.stop();
        e2b.close();
        if (previewListener != null) {
            previewListener.close();
        }
        if (ownsServices) {
            services.close(); // the interpreters end; the sessions' files stay for the next start
        }
    }
}
