package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.server.access.Auth;
import dev.crucible.server.access.BrowserGuard;
import dev.crucible.server.e2b.template.TemplateApi;
import dev.crucible.server.http.JsonObject;
import dev.crucible.server.ports.PreviewTokens;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.SessionConfig;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.zip.ZipException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * E2B's three planes on the API's own listener (issue 28; facts in docs/e2b.md): its SDKs, pointed at Crucible with
 * {@code E2B_API_URL} and {@code E2B_SANDBOX_URL}, send every call to one host, and this filter takes E2B's before
 * Crucible's routes see them. A call with {@code E2b-Sandbox-Port: 49983} is envd's (files, the filesystem and process
 * services), {@code 49999} the code interpreter's ({@code /execute}, contexts); one to {@code /sandboxes} or {@code
 * /v2/sandboxes} without that header is the control plane's. The control plane authenticates with {@code X-API-KEY}
 * carrying a Crucible token (the sandbox is that token's session); envd and {@code /execute} with the sandbox's own
 * access token, a secret of the server's derived from the sandbox's id.
 */
public final class E2bApi implements Filter, AutoCloseable {
    static final String ENVD_PORT = "49983";
    static final String JUPYTER_PORT = "49999";

    private static final System.Logger LOG = System.getLogger("crucible.e2b");
    private final Auth auth;
    private final BrowserGuard guard;
    private final PreviewTokens secrets;
    private final JsonMapper json;
    private final E2bSandboxes sandboxes;
    private final ControlPlane control;
    private final TemplateApi built;
    private final Envd envd;
    private final Jupyter jupyter;
    /** Where sandboxes' ports are reached, {@code domain[:port]} of the preview listener; null without one. */
    private final String previewHost;
    private final SessionManager sessions;
    private final Clock clock;

    private E2bApi(Auth auth, BrowserGuard guard, PreviewTokens secrets, JsonMapper json, SessionManager sessions,
            RuntimeRegistry runtimes, SessionConfig config, Map<String, String> templates, String previewHost,
            Clock clock) throws IOException {
        this.previewHost = previewHost;
        this.auth = auth;
        this.guard = guard;
        this.secrets = secrets;
        this.json = json;
        Contexts contexts = new Contexts(sessions, runtimes, json);
        this.sandboxes = new E2bSandboxes(config.dataDir(), json, sessions, clock, contexts::forget);
        this.control = new ControlPlane(this, sandboxes, sessions, config, templates, clock);
        this.built = new TemplateApi(config.dataDir(), json, runtimes.images().store(), sessions.sandbox());
        this.sessions = sessions;
        this.clock = clock;
        this.envd = new Envd(this, sessions, json);
        this.jupyter = new Jupyter(this, sessions, contexts, json);
    }

    /**
     * E2B's planes over {@code sessions}, their records kept in {@code config}'s data directory.
     *
     * @param templates E2B template names the operator maps to a runtime's language or an image
     * @param previewHost the preview listener's {@code domain[:port]}, the {@code domain} E2B's {@code getHost(port)}
     *     names ports under; null when the server has no preview listener

     * @throws IllegalArgumentException when that directory cannot keep them
     */
    public static E2bApi start(Auth auth, BrowserGuard guard, PreviewTokens secrets, JsonMapper json,
            SessionManager sessions, RuntimeRegistry runtimes, SessionConfig config, Map<String, String> templates,
            String previewHost) {
        try {
            return new E2bApi(auth, guard, secrets, json, sessions, runtimes, config, templates, previewHost,
                    Clock.systemUTC());
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot keep E2B sandboxes' records in " + config.dataDir() + "/e2b: "
                    + e.getMessage(), e);
        }
    }

    /** Counts one answered call, as the server's request metrics do: its route family, method, status and time. */
    @FunctionalInterface
    public interface Counted {
        void request(String route, String method, int status, long nanos);
    }

    private volatile Counted counted = (route, method, status, nanos) -> {};

    /** Counts every call of E2B's planes with {@code counted} from now on, by plane (a label of a few values). */
    public void countWith(Counted counted) {
        this.counted = counted;
    }

    /**
     * Sends a call for a sandbox another replica holds to that replica (the cluster's {@code SessionRouter}); false
     * when it is to be served here.
     */
    @FunctionalInterface
    public interface Forwarder {
        boolean forwarded(String id, HttpServletRequest req, HttpServletResponse res)
                throws IOException, InterruptedException;
    }

    private volatile Forwarder forwarder = (id, req, res) -> false;

    /** Forwards every call for a sandbox held by another replica with {@code forwarder} from now on, as every route. */
    public void forwardWith(Forwarder forwarder) {
        this.forwarder = forwarder;
    }

    /**
     * The sandbox a call names: E2B's {@code E2b-Sandbox-Id} on its data planes, {@code /sandboxes/{id}…} or
     * {@code /v2/sandboxes/{id}…} on its control plane; null for a create, a list, or an SDK that left it out.
     */
    static String sandboxNamed(HttpServletRequest req, boolean controlPlane) {
        if (!controlPlane) {
            return req.getHeader("E2b-Sandbox-Id");
        }
        String path = req.getRequestURI();
        String rest = path.startsWith("/v2/") ? path.substring(3) : path;
        if (!rest.startsWith("/sandboxes/")) {
            return null;
        }
        String tail = rest.substring("/sandboxes/".length());
        int slash = tail.indexOf('/');
        String id = slash < 0 ? tail : tail.substring(0, slash);
        return id.isEmpty() ? null : id;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse res = (HttpServletResponse) response;
        String port = req.getHeader("E2b-Sandbox-Port");
        String path = req.getRequestURI();
        boolean controlPlane = port == null && (path.equals("/sandboxes") || path.startsWith("/sandboxes/")
                || path.equals("/v2/sandboxes") || path.startsWith("/v2/sandboxes/") || TemplateApi.serves(path));
        if (port == null && !controlPlane) {
            chain.doFilter(request, response);
            return;
        }
        long start = System.nanoTime();
        try {
            serve(req, res, port, controlPlane);
        } finally {
            counted.request(controlPlane ? "e2b control plane" : ENVD_PORT.equals(port) ? "e2b envd"
                    : JUPYTER_PORT.equals(port) ? "e2b code interpreter" : "e2b other port", req.getMethod(),
                    res.getStatus(), System.nanoTime() - start);
        }
    }

    /** One call of E2B's planes, its refusals answered in E2B's shape. */
    private void serve(HttpServletRequest req, HttpServletResponse res, String port, boolean controlPlane)
            throws IOException {
        try {
            guard.checkHostAndOrigin(req.getHeader("Host"), req.getHeader("Origin"), req.getLocalPort());
            if (forwarder.forwarded(sandboxNamed(req, controlPlane), req, res)) {
                return; // its holder answered
            }
            if (controlPlane && TemplateApi.serves(req.getRequestURI())) {
                built.serve(req, res, () -> owner(req));
            } else if (controlPlane) {
                control.serve(req, res);
            } else if (port.equals(ENVD_PORT)) {
                envd.serve(req, res);
            } else if (port.equals(JUPYTER_PORT)) {
                jupyter.serve(req, res);
            } else {
                throw new RequestException(ErrorCode.NOT_FOUND, "port " + port + " of a sandbox is reached through"
                        + " /v1/sessions/{id}/ports/" + port + "/ or a preview link, not E2B's sandbox URL");
            }
        } catch (RequestException e) {
            if (!res.isCommitted()) {
                if (e.retryAfterSeconds() > 0) { // E2B's SDKs wait this long and ask again (on a 429)
                    res.setHeader("Retry-After", Integer.toString(e.retryAfterSeconds()));
                }
                error(res, e.code().httpStatus(), e.getMessage());
            }
        } catch (NotRunning e) {
            if (!res.isCommitted()) {
                error(res, 502, e.getMessage()); // E2B's answer for a sandbox not running: the SDKs' TimeoutError
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (!res.isCommitted()) {
                error(res, 503, "the server is stopping: retry");
            }
        } catch (JacksonException | ZipException e) {
            if (!res.isCommitted()) { // a field of another type than E2B's, or a gzip body that is not one
                error(res, 400, "the request is malformed: " + e.getMessage());
            }
        }
    }

    /** The spares {@code serve --session-spares SPEC} asks for, as {@link Spares#of} reads them. */
    public static List<SessionConfig.Spare> spares(String spec, Map<String, String> named) {
        return Spares.of(spec, named);
    }

    /** What an E2B {@code templateID} names for {@code owner}: a template it built, else {@link Template#of}. */
    Template template(String owner, String id, Map<String, String> named) {
        return built.imageOf(owner, id).map(image -> new Template("python", image, null))
                .orElseGet(() -> Template.of(id, named));
    }

    /** The Crucible owner of a control-plane call: its {@code X-API-KEY} (or bearer token), checked. */
    String owner(HttpServletRequest req) {
        String key = req.getHeader("X-API-KEY");
        String authorization = key != null ? "Bearer " + key.strip() : req.getHeader("Authorization");
        try {
            auth.check(authorization);
        } catch (RequestException e) {
            throw new RequestException(ErrorCode.UNAUTHORIZED, "missing or invalid API key: send a Crucible token as"
                    + " X-API-KEY (E2B_API_KEY)");
        }
        return auth.owner(authorization);
    }

    /**
     * The sandbox's {@code domain} and {@code trafficAccessToken} for E2B's {@code getHost(port)}: a grant of every
     * port of its session until {@code untilMs}, bound to its traffic nonce ({@link #trafficCurrent}), which the
     * preview listener takes in {@code e2b-traffic-access-token}; a null domain without a preview listener, or for a
     * replica's id (a host name's label keeps no dot).
     */
    String[] traffic(E2bSandboxes.Sandbox s, long untilMs) {
        String token = secrets.mint(new PreviewTokens.Grant(s.owner(), s.id(), 0, untilMs, s.trafficNonce()));
        return new String[] {previewHost == null || s.id().contains(".") ? null : previewHost, token};
    }

    /**
     * Whether {@code grant}, a traffic token's, is of a sandbox that lives now, of its owner, and bound to its current
     * traffic nonce: false once the sandbox is killed (its record deleted) or its tokens rotated. What the preview
     * routes are given to check tokens bound to a life.
     */
    public boolean trafficCurrent(PreviewTokens.Grant grant) {
        Optional<E2bSandboxes.Sandbox> current = sandboxes.get(grant.session()).filter(s -> s.owner().equals(
                grant.owner()) && MessageDigest.isEqual(s.trafficNonce().getBytes(StandardCharsets.US_ASCII),
                        grant.nonce().getBytes(StandardCharsets.US_ASCII)));
        current.filter(E2bSandboxes.Sandbox::autoResume).ifPresent(s -> { // traffic to a port resumes it too
            try {
                awake(s);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot resume E2B sandbox " + s.id() + " for traffic: " + e);
            }
        });
        return current.isPresent();
    }

    /** A data-plane call reached a paused sandbox made without {@code autoResume}: E2B's 502. */
    static final class NotRunning extends RuntimeException {
        NotRunning(String message) {
            super(message);
        }
    }

    /**
     * Sandbox {@code s} running, for traffic of its own: as it is when it runs; resumed when it is paused and was made
     * with {@code autoResume} (E2B's {@code lifecycle.autoResume}), its deadline then its create's timeout from now,
     * as E2B's; else refused.
     *
     * @throws NotRunning for a paused sandbox without {@code autoResume} (resumed only by {@code connect})
     */
    E2bSandboxes.Sandbox awake(E2bSandboxes.Sandbox s) {
        if (!sandboxes.paused(s)) {
            return s;
        }
        if (!s.autoResume()) {
            throw new NotRunning("sandbox " + s.id() + " is paused: resume it with Sandbox.connect(), or create it"
                    + " with lifecycle {onTimeout: \"pause\", autoResume: true}");
        }
        try {
            sessions.pauses(s.owner(), s.id()).resume(); // one racing it finds it running, or waits for it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
        }
        long end = clock.millis() + s.timeoutS() * 1000;
        try {
            return sandboxes.update(s.id(), now -> now.until(Math.max(now.endAtMs(), end))).orElse(s);
        } catch (IOException e) {
            throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "cannot record the resumed sandbox: " + e);
        }
    }

    /**
     * The sandbox of a code-interpreter call that is not {@code /execute} ({@code /contexts}: E2B's SDKs send no access
     * token there, only the sandbox's {@code E2B-Traffic-Access-Token}): either token, checked.
     *
     * @throws RequestException 401 without one of them, as {@link #sandboxOf}
     */
    E2bSandboxes.Sandbox sandboxOfContexts(HttpServletRequest req) {
        E2bSandboxes.Sandbox s = sandboxOf(req, false);
        if (req.getHeader("X-Access-Token") != null) {
            return s; // checked by sandboxOf
        }
        String traffic = req.getHeader("E2B-Traffic-Access-Token");
        PreviewTokens.Grant grant;
        try {
            grant = traffic == null ? null : secrets.verify(traffic.strip(), System.currentTimeMillis(),
                    this::trafficCurrent);
        } catch (RequestException e) {
            grant = null;
        }
        if (grant == null || grant.port() != 0 || !grant.session().equals(s.id()) || !grant.owner().equals(s.owner())) {
            throw new RequestException(ErrorCode.UNAUTHORIZED, "contexts need the sandbox's X-Access-Token or its"
                    + " E2B-Traffic-Access-Token");
        }
        return awake(s);
    }

    /** The access token of sandbox {@code id}: what envd and {@code /execute} calls carry as {@code X-Access-Token}. */
    String accessToken(String id) {
        return secrets.derive("e2b-envd", id);
    }

    /**
     * The sandbox a data-plane call is for: named by {@code E2b-Sandbox-Id} (or, from SDKs that leave it out, found by
     * its access token), with that sandbox's access token.
     *
     * @throws RequestException 401 without the right token, 404 for no such sandbox (502 on {@code /health})
     */
    E2bSandboxes.Sandbox sandboxOf(HttpServletRequest req, boolean tokenRequired) {
        String id = req.getHeader("E2b-Sandbox-Id");
        String token = req.getHeader("X-Access-Token");
        Optional<E2bSandboxes.Sandbox> found = id != null ? sandboxes.get(id) : token == null ? Optional.empty()
                : sandboxes.byToken(this::accessToken, token);
        if (found.isEmpty()) {
            throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no sandbox " + (id == null ? "(no E2b-Sandbox-Id"
                    + " header)" : id.replaceAll("[^A-Za-z0-9._-]", "?")));
        }
        if (tokenRequired || token != null) {
            byte[] want = accessToken(found.get().id()).getBytes(StandardCharsets.US_ASCII);
            if (token == null || !MessageDigest.isEqual(want, token.strip().getBytes(StandardCharsets.US_ASCII))) {
                throw new RequestException(ErrorCode.UNAUTHORIZED, "missing or wrong X-Access-Token for sandbox "
                        + found.get().id());
            }
            return awake(found.get()); // its own traffic: resumed (autoResume) or refused while paused
        }
        return found.get();
    }

    JsonMapper json() {
        return json;
    }

    /** A request's JSON object body, at most {@code cap} bytes ({@code {}} when empty). */
    JsonNode body(HttpServletRequest req, int cap) throws IOException {
        byte[] bytes = req.getInputStream().readNBytes(cap + 1);
        if (bytes.length > cap) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "the body is larger than " + cap + " bytes");
        }
        if (bytes.length == 0) {
            return json.createObjectNode();
        }
        try {
            JsonNode node = json.readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new RequestException(ErrorCode.INVALID_JSON, "the body is not a JSON object");
            }
            return node;
        } catch (JacksonException e) {
            throw new RequestException(ErrorCode.INVALID_JSON, "the body is not JSON: " + e.getOriginalMessage());
        }
    }

    /** Answers {@code body} as JSON. */
    void write(HttpServletResponse res, int status, Object body) throws IOException {
        res.setStatus(status);
        res.setContentType("application/json");
        res.getOutputStream().write(json.writeValueAsBytes(body));
    }

    /** E2B's error body: {@code {"code": <status>, "message": "…"}} (its SDKs read the code from the body). */
    void error(HttpServletResponse res, int status, String message) throws IOException {
        write(res, status, JsonObject.of("code", status, "message", message));
    }

    @Override
    public void close() {
        sandboxes.close();
    }
}
