package dev.crucible.server.ports;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.access.Auth;
import dev.crucible.server.http.ErrorBody;
import dev.crucible.server.session.SessionRoutes;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionPorts;
import io.javalin.http.Context;
import io.javalin.http.HttpStatus;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The port routes of a session (issue 27 item 5): HTTP to a server listening in the session's sandbox, for a bearer
 * client ({@code /v1/sessions/{id}/ports/{port}/…}) or a browser holding a signed preview link
 * ({@code /v1/previews/{token}/…}); the links themselves ({@code POST /v1/sessions/{id}/previews}); the ports that
 * listen ({@code GET /v1/sessions/{id}/ports}). Both proxy routes serve on the API's origin, so every answer is fenced
 * into an opaque origin ({@link PortProxy#CSP}) and sets no cookie; with a listener of previews' own
 * ({@link PreviewListener}) the links open an origin of each preview's own there instead, and the link route only
 * redirects there. Handlers only: the server's route table registers them.
 */
public final class PortRoutes {
    /** Every method a proxied request may have (CONNECT and TRACE are not passed on). */
    public static final List<String> METHODS = List.of("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");

    private final SessionManager sessions;
    private final Auth auth;
    private final SessionRoutes.BodyReader bodies;
    private final PreviewTokens tokens;
    private final InstantSource clock;
    private final PreviewListener listener;
    private final Predicate<PreviewTokens.Grant> current;

    /**
     * @param listener the listener of previews' own, whose origins links open; null when there is none
     * @param current whether a token bound to a life is still of it ({@link PreviewTokens#verify(String, long,
     *     Predicate)})
     */
    public PortRoutes(SessionManager sessions, Auth auth, SessionRoutes.BodyReader bodies, PreviewTokens tokens,
            InstantSource clock, PreviewListener listener, Predicate<PreviewTokens.Grant> current) {
        this.current = current;
        this.sessions = sessions;
        this.auth = auth;
        this.bodies = bodies;
        this.tokens = tokens;
        this.clock = clock;
        this.listener = listener;
    }

    /** {@code POST /v1/sessions/{id}/previews}: {@code port}, optional {@code ttl_s}. */
    record PreviewBody(@JsonProperty("port") Integer port, @JsonProperty("ttl_s") Long ttlS) {}

    /**
     * A preview link: open {@code url} in a browser until {@code expires_at}; {@code host} is the preview's own origin
     * (absent without a listener of previews' own).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Preview(@JsonProperty("url") String url, @JsonProperty("port") int port,
            @JsonProperty("expires_at") String expiresAt, @JsonProperty("host") String host) {}

    /** The ports the session's servers listen on. */
    public void list(Context ctx) {
        ctx.json(Map.of("ports", sessions.ports(owner(ctx), ctx.pathParam("id")).list()));
    }

    /** Proxies a bearer client's request to the session's port. */
    public void proxy(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        int port = port(ctx.pathParam("port"));
        SessionPorts ports = sessions.ports(owner(ctx), id);
        String prefix = "/v1/sessions/" + id + "/ports/" + port;
        forward(ctx, ports, port, prefix, 5);
    }

    /**
     * Proxies a browser's request under a preview link: the token is the credential (no bearer). With a listener of
     * previews' own, nothing a session serves is answered on the API's origin: the request is redirected ({@code 307},
     * method and body kept) to the same path and query on the preview's own origin, carrying the token as that
     * listener's link does.
     */
    public void preview(Context ctx) throws Exception {
        String token = ctx.pathParam("token");
        PreviewTokens.Grant grant = tokens.verify(token, clock.millis(), current);
        if (listener != null) {
            String rest = rest(ctx.req().getRequestURI(), 3);
            String query = ctx.queryString() == null ? "" : ctx.queryString() + "&";
            ctx.header("Cache-Control", "no-store");
            ctx.redirect("http://" + listener.host(grant.session(), grant.port()) + (rest == null ? "/" : rest) + "?"
                    + query + PreviewListener.COOKIE + "=" + token, HttpStatus.TEMPORARY_REDIRECT);
            return;
        }
        SessionPorts ports;
        try {
            ports = sessions.ports(grant.owner(), grant.session());
        } catch (RequestException e) {
            throw new RequestException(ErrorCode.INVALID_PREVIEW, "this preview link's session is gone");
        }
        forward(ctx, ports, grant.port(), "/v1/previews/" + token, 3);
    }

    /**
     * Makes a preview link to one port of the session: on the origin of its own the listener of previews' own gives it
     * when there is one, else on this server's origin, fenced in as the bearer route is.
     */
    public void createPreview(Context ctx) throws Exception {
        String owner = owner(ctx);
        SessionPorts ports = sessions.ports(owner, ctx.pathParam("id"));
        PreviewBody body = bodies.read(ctx, PreviewBody.class);
        if (body.port() == null || body.port() < 1 || body.port() > 65_535) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "send {\"port\": 1-65535} (and \"ttl_s\" up to "
                    + PreviewTokens.MAX_TTL_S + ")");
        }
        long ttl = body.ttlS() == null ? PreviewTokens.DEFAULT_TTL_S : body.ttlS();
        if (ttl < 1 || ttl > PreviewTokens.MAX_TTL_S) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "ttl_s is 1-" + PreviewTokens.MAX_TTL_S + ", not "
                    + ttl);
        }
        long expires = Math.min(clock.millis() + ttl * 1000, ports.endOfLifeMs());
        String token = tokens.mint(new PreviewTokens.Grant(owner, ports.id(), body.port(), expires));
        String host = listener == null ? null : listener.host(ports.id(), body.port());
        String url = host != null ? "http://" + host + "/?" + PreviewListener.COOKIE + "=" + token
                : ctx.scheme() + "://" + ctx.host() + "/v1/previews/" + token + "/";
        ctx.status(201).json(new Preview(url, body.port(), Instant.ofEpochMilli(expires).toString(), host));
    }

    /**
     * Forwards to the port: the request's path past its first {@code skip} segments (the route's own) and its query,
     * as the session's server sees them; a bare route root is redirected to its slash (relative links resolve).
     */
    private void forward(Context ctx, SessionPorts ports, int port, String prefix, int skip) throws Exception {
        String raw = ctx.req().getRequestURI();
        String rest = rest(raw, skip);
        if (rest == null) {
            ctx.redirect(raw + "/" + (ctx.queryString() == null ? "" : "?" + ctx.queryString()), HttpStatus.FOUND);
            return;
        }
        String target = rest + (ctx.queryString() == null ? "" : "?" + ctx.queryString());
        ctx.status(PortProxy.exchange(ctx.req(), ctx.res(), ports, port, target, prefix, PortProxy.Origin.API));
        // the answer is the app's, whatever its status: the server's own 404 and 405 pages must not be written over it
        ctx.attribute(ErrorBody.ANSWERED, Boolean.TRUE);
    }

    /** The raw path past its first {@code skip} segments ({@code /a/b/rest}), or null when nothing follows them. */
    static String rest(String raw, int skip) {
        int at = 0;
        for (int i = 0; i <= skip; i++) {
            at = raw.indexOf('/', at + (i == 0 ? 0 : 1));
            if (at < 0) {
                return null;
            }
        }
        return raw.substring(at);
    }

    private static int port(String text) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a port is a number 1-65535, not '" + text + "'");
        }
    }

    private String owner(Context ctx) {
        return auth.owner(ctx.header("Authorization"));
    }
}
