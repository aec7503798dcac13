package dev.crucible.server.e2b;

import dev.crucible.egress.NetworkRequest;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.desktop.DesktopRoot;
import dev.crucible.server.http.JsonObject;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.CellStatus;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.workspace.DataDirFull;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;

/**
 * E2B's control plane (its {@code spec/openapi.yml}) over Crucible's sessions: create ({@code POST /v2/sandboxes}, and
 * {@code POST /sandboxes} as the Python SDK and older JavaScript ones send it; exactly 201), connect, kill (204, then
 * 404), set timeout (204), get info, list (with metadata and state filters, {@code limit} and {@code X-Next-Token}
 * pages), metrics (none kept: an empty list); and Crucible's own {@code POST /sandboxes/{id}/rotate-traffic-token}
 * (connect's answer, with a new {@code trafficAccessToken}: the ones made before are refused from then on). Every refusal is E2B's body, {@code {"code": status, "message"}}.
 */
final class ControlPlane {
    /** The envd version reported: no default user sent, closeStdin allowed, uploads multipart (docs/e2b.md). */
    static final String ENVD_VERSION = "0.5.2";
    static final String CLIENT_ID = "crucible";
    private static final long DEFAULT_TIMEOUT_S = 300;
    private static final Pattern ONE = Pattern.compile("^(?:/v2)?/sandboxes/([^/]+)(/[a-z-]+)?$");

    private final E2bApi api;
    private final E2bSandboxes sandboxes;
    private final SessionManager sessions;
    private final SessionConfig config;
    private final Map<String, String> templates;
    private final Clock clock;

    ControlPlane(E2bApi api, E2bSandboxes sandboxes, SessionManager sessions, SessionConfig config,
            Map<String, String> templates, Clock clock) {
        this.templates = templates;
        this.api = api;
        this.sandboxes = sandboxes;
        this.sessions = sessions;
        this.config = config;
        this.clock = clock;
    }

    void serve(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String owner = api.owner(req);
        String path = req.getRequestURI();
        String method = req.getMethod();
        if (path.equals("/sandboxes") || path.equals("/v2/sandboxes")) {
            switch (method) {
                case "POST" -> create(req, res, owner);
                case "GET" -> list(req, res, owner);
                default -> throw new RequestException(ErrorCode.METHOD_NOT_ALLOWED, method + " " + path);
            }
            return;
        }
        Matcher m = ONE.matcher(path);
        if (!m.matches()) {
            throw new RequestException(ErrorCode.NOT_FOUND, "no E2B route " + method + " " + path);
        }
        E2bSandboxes.Sandbox s = sandboxes.get(owner, m.group(1)).orElseThrow(() -> new RequestException(
                ErrorCode.NOT_FOUND, "sandbox " + m.group(1).replaceAll("[^A-Za-z0-9._-]", "?") + " not found"));
        String action = m.group(2) == null ? "" : m.group(2);
        switch (method + " " + action) {
            case "GET " -> api.write(res, 200, detail(s));
            case "DELETE " -> {
                if (!sandboxes.kill(s)) {
                    throw new RequestException(ErrorCode.NOT_FOUND, "sandbox " + s.id() + " not found");
                }
                res.setStatus(204);
            }
            case "POST /timeout" -> {
                long timeout = timeoutOf(api.body(req, 1 << 20), null);
                long end = endAt(timeout);
                sandboxes.update(s.id(), now -> now.until(end)).orElseThrow(() -> gone(s));
                res.setStatus(204);
            }
            case "POST /connect", "POST /resume" -> {
                JsonNode b = api.body(req, 1 << 20);
                resume(owner, s.id()); // a paused one comes back (its memory behind gVisor); a running one is as it was
                long asked = b.has("timeout") ? endAt(timeoutOf(b, null)) : 0;
                E2bSandboxes.Sandbox kept = sandboxes.update(s.id(), now -> now.until(Math.max(now.endAtMs(), asked)))
                        .orElseThrow(() -> gone(s));
                api.write(res, 200, created(kept));
            }
            case "POST /pause" -> {
                if (paused(owner, s.id())) {
                    throw new RequestException(ErrorCode.SESSION_BUSY, "sandbox " + s.id() + " is paused already");
                }
                try {
                    sessions.pauses(owner, s.id()).pause();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
                }
                res.setStatus(204);
            }
            case "POST /rotate-traffic-token" -> { // Crucible's own: every traffic token made before is refused
                E2bSandboxes.Sandbox kept = sandboxes.update(s.id(), E2bSandboxes.Sandbox::rotated)
                        .orElseThrow(() -> gone(s));
                api.write(res, 200, created(kept));
            }
            case "GET /metrics" -> api.write(res, 200, List.of());
            default -> throw new RequestException(ErrorCode.NOT_FOUND, "no E2B route " + method + " " + path);
        }
    }

    /** A sandbox forgotten while a request about it ran (killed, or its session ended). */
    private static RequestException gone(E2bSandboxes.Sandbox s) {
        return new RequestException(ErrorCode.NOT_FOUND, "sandbox " + s.id() + " not found");
    }

    private void create(HttpServletRequest req, HttpServletResponse res, String owner) throws IOException {
        JsonNode b = api.body(req, 1 << 20);
        if (b.hasNonNull("templateID") && !b.get("templateID").isString()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "templateID is a string");
        }
        String template = b.hasNonNull("templateID") ? b.get("templateID").asString() : "base";
        long timeout = timeoutOf(b, DEFAULT_TIMEOUT_S);
        Map<String, String> metadata = strings(b.get("metadata"), "metadata");
        Map<String, String> env = strings(b.get("envVars"), "envVars");
        Template t = api.template(owner, template, templates); // a template the owner built first
        boolean desktop = Template.desktop(template, templates);
        boolean autoPause = b.path("autoPause").asBoolean(false);
        JsonNode resumeAsked = b.path("autoResume"); // {"enabled": true} as the SDKs send it, or a bare boolean
        boolean autoResume = (resumeAsked.isObject() ? resumeAsked.path("enabled") : resumeAsked).asBoolean(false);
        if (autoResume && !autoPause) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "autoResume needs autoPause (lifecycle {onTimeout:"
                    + " \"pause\"}): only a paused sandbox is resumed by traffic");
        }
        String envCell = env.isEmpty() ? null : Environment.setForGood(t.language(), env); // bad names refused first
        SessionInfo info;
        try {
            // E2B's timeout is a deadline this plane keeps; the session itself idles out only at its lifetime
            info = sessions.create(owner, new SessionManager.CreateRequest(t.language(),
                    desktop ? DesktopRoot.LIMITS : null, config.maxLifetime().toSeconds(), null, t.image(), network(b), null, null, t.isolation()));
        } catch (RequestException e) {
            throw switch (e.code()) {
                case UNKNOWN_LANGUAGE, IMAGE_NOT_FOUND, RUNTIME_UNAVAILABLE -> new RequestException(ErrorCode.NOT_FOUND,
                        "template '" + template + "' not found: " + e.getMessage());
                // E2B's SDKs wait and ask again on a 429 with Retry-After (never on a 503): a create that waited its
                // whole turn in the queue says so as a 429, so a burst is retried rather than failed
                case QUEUE_TIMEOUT -> new RequestException(ErrorCode.TOO_MANY_REQUESTS, e.getMessage(),
                        e.retryAfterSeconds());
                default -> e;
            };
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
        }
        try {
            if (desktop) {
                DesktopRoot.prepare(sessions, owner, info.id());
            }
            E2bSandboxes.Sandbox s = sandbox(info, owner, template, timeout, metadata, env, envCell, autoPause,
                    autoResume);
            api.write(res, 201, created(s));
        } catch (IOException | RuntimeException e) { // nothing is left of a create that was not answered
            deleteQuietly(owner, info.id());
            if (e instanceof IOException io) {
                throw DataDirFull.orElse(io, config.dataDir(), "the new sandbox", new RequestException(
                        ErrorCode.INTERNAL, "cannot keep the new sandbox: " + io.getMessage()));
            }
            throw e;
        }
    }

    /** The new session {@code info} as an E2B sandbox: its environment set, its record kept. */
    private E2bSandboxes.Sandbox sandbox(SessionInfo info, String owner, String template, long timeout,
            Map<String, String> metadata, Map<String, String> env, String envCell, boolean autoPause,
            boolean autoResume) throws IOException {
        long now = clock.millis();
        String home = Envd.homeOf(sessions, owner, info.id());
        if (!env.isEmpty()) {
            try {
                var set = sessions.execute(owner, info.id(), envCell, null, null);
                if (set.status() != CellStatus.OK) {
                    throw new RequestException(ErrorCode.INVALID_REQUEST, "envVars could not be set in the "
                            + info.language() + " sandbox: " + (set.error() == null ? set.status() : set.error().message()));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
            }
        }
        E2bSandboxes.Sandbox s = new E2bSandboxes.Sandbox(info.id(), owner, template, info.language(), info.limits(),
                metadata, env, home, now, endAt(timeout), autoPause, E2bSandboxes.newNonce(), autoResume, timeout);
        sandboxes.put(s);
        return s;
    }

    private void deleteQuietly(String owner, String id) {
        try {
            sandboxes.forget(id);
            sessions.delete(owner, id);
        } catch (RuntimeException e) {
            System.getLogger("crucible.e2b").log(System.Logger.Level.WARNING, "cannot remove sandbox " + id + ": " + e);
        }
    }

    /** The network asked for: {@code network.allowOut} hosts, within the operator's list (else 422). */
    private static NetworkRequest network(JsonNode b) {
        JsonNode allow = b.path("network").path("allowOut");
        if (!allow.isArray() || allow.isEmpty()) {
            return null; // allow_internet_access alone opens nothing: egress is what a request lists (docs/e2b.md)
        }
        List<String> hosts = new ArrayList<>();
        allow.forEach(h -> hosts.add(h.asString()));
        return NetworkRequest.allow(hosts);
    }

    private void list(HttpServletRequest req, HttpServletResponse res, String owner) throws IOException {
        String state = req.getParameter("state");
        Map<String, String> wanted = metadataFilter(req.getParameter("metadata"));
        List<Map<String, Object>> all = new ArrayList<>();
        List<String> states = state == null || state.isEmpty() ? List.of("running", "paused")
                : List.of(state.split(","));
        for (E2bSandboxes.Sandbox s : sandboxes.list(owner)) {
            if (s.metadata().entrySet().containsAll(wanted.entrySet())
                    && states.contains(paused(owner, s.id()) ? "paused" : "running")) {
                all.add(listed(s));
            }
        }
        int from = 0;
        String next = req.getParameter("nextToken");
        if (next != null && !next.isEmpty()) {
            try {
                from = Integer.parseInt(next);
                if (from < 0) {
                    throw new NumberFormatException(next);
                }
            } catch (NumberFormatException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "nextToken " + next + " is not one this server gave");
            }
        }
        int limit = 100;
        if (req.getParameter("limit") != null) {
            try {
                limit = Integer.parseInt(req.getParameter("limit"));
            } catch (NumberFormatException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "limit is a number of sandboxes");
            }
        }
        int to = Math.min(all.size(), from + Math.max(1, Math.min(limit, 1000)));
        if (to < all.size()) {
            res.setHeader("X-Next-Token", Integer.toString(to));
        }
        api.write(res, 200, from >= all.size() ? List.of() : all.subList(from, to));
    }

    private static Map<String, String> metadataFilter(String query) {
        Map<String, String> wanted = new LinkedHashMap<>();
        if (query == null || query.isEmpty()) {
            return wanted;
        }
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                wanted.put(URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return wanted;
    }

    /** Whether the sandbox's session is paused (E2B's {@code pause}; its memory kept behind gVisor). */
    private boolean paused(String owner, String id) {
        try {
            return sessions.pauses(owner, id).paused();
        } catch (RequestException e) {
            return false; // its session is gone: the plane's own sweep deals with it
        }
    }

    private void resume(String owner, String id) {
        try {
            if (paused(owner, id)) {
                sessions.pauses(owner, id).resume();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
        }
    }

    /** The {@code Sandbox} answer of create and connect. */
    private Map<String, Object> created(E2bSandboxes.Sandbox s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sandboxID", s.id());
        m.put("templateID", s.templateId());
        m.put("clientID", CLIENT_ID);
        m.put("envdVersion", ENVD_VERSION);
        m.put("envdAccessToken", api.accessToken(s.id()));
        String[] traffic = api.traffic(s, s.startedAtMs() + config.maxLifetime().toMillis());
        m.put("trafficAccessToken", traffic[1]);
        m.put("domain", traffic[0]);
        return m;
    }

    private Map<String, Object> listed(E2bSandboxes.Sandbox s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sandboxID", s.id());
        m.put("templateID", s.templateId());
        m.put("clientID", CLIENT_ID);
        m.put("startedAt", Instant.ofEpochMilli(s.startedAtMs()).toString());
        m.put("endAt", Instant.ofEpochMilli(s.endAtMs()).toString());
        m.put("cpuCount", Math.max(1, (int) Math.ceil(s.limits().cpus())));
        m.put("memoryMB", s.limits().memoryMb());
        m.put("diskSizeMB", config.workspaceQuota() >> 20);
        m.put("state", paused(s.owner(), s.id()) ? "paused" : "running");
        m.put("metadata", s.metadata());
        m.put("envdVersion", ENVD_VERSION);
        m.put("lifecycle", JsonObject.of("onTimeout", s.autoPause() ? "pause" : "kill", "autoResume", s.autoResume()));
        return m;
    }

    private Map<String, Object> detail(E2bSandboxes.Sandbox s) {
        Map<String, Object> m = listed(s);
        m.put("envdAccessToken", api.accessToken(s.id()));
        m.put("domain", api.traffic(s, 0)[0]);
        return m;
    }

    private long endAt(long timeoutS) {
        return clock.millis() + timeoutS * 1000;
    }

    private long timeoutOf(JsonNode b, Long fallback) {
        JsonNode t = b.get("timeout");
        if (t == null || t.isNull()) {
            if (fallback == null) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "timeout (seconds) is required");
            }
            return fallback;
        }
        if (!t.canConvertToLong() || t.asLong() < 0 || t.asLong() > config.maxLifetime().toSeconds()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "timeout is seconds from 0 to "
                    + config.maxLifetime().toSeconds() + " (the server's longest session lifetime)");
        }
        return t.asLong();
    }

    private static Map<String, String> strings(JsonNode node, String name) {
        Map<String, String> m = new LinkedHashMap<>();
        if (node == null || node.isNull()) {
            return m;
        }
        if (!node.isObject()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, name + " is an object of strings");
        }
        for (var e : node.properties()) {
            if (!e.getValue().isString()) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, name + "." + e.getKey() + " is not a string");
            }
            m.put(e.getKey(), e.getValue().asString());
        }
        return m;
    }
}
