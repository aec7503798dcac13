package dev.crucible.server.ports;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.http.AcceptQueue;
import dev.crucible.server.http.ErrorBody;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionPorts;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.HandlerType;
import io.javalin.http.HttpStatus;
import io.javalin.json.JavalinJackson3;
import io.javalin.router.Endpoint;
import jakarta.servlet.DispatcherType;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.function.Predicate;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.server.handler.ErrorHandler;
import tools.jackson.databind.json.JsonMapper;

/**
 * A listener of previews' own: an HTTP listener apart from the API's (a Javalin instance of its own, so no request to
 * it can ever reach an API route), where each session's port is an origin of its own, {@code {port}-{hex}.{domain}}
 * ({@link PreviewHost}), as E2B's {@code getHost}. There an application's absolute paths, cookies and fetches to its
 * own API work as on any origin: its answers are not fenced in, its {@code Set-Cookie} passes.
 * <ul>
 *   <li>A request whose {@code Host} is not a preview host is {@code 404 not_found}.</li>
 *   <li>A link ({@code ?crucible_preview=TOKEN}, from {@code POST /v1/sessions/{id}/previews}) whose token grants
 *       this host's session and port sets the cookie {@code crucible_preview} (host-only, {@code HttpOnly},
 *       {@code SameSite=Lax}); a browser's request (one with {@code Sec-Fetch-Mode}) is answered {@code 302} to the
 *       same path and query without the token, any other client's is proxied at once, without the token.</li>
 *   <li>Every other request needs that cookie holding a valid token for this host, else {@code 403 invalid_preview};
 *       it is then proxied ({@link PortProxy}, WebSocket upgrades included) without the cookie or the token.</li>
 *   <li>Or the field {@code e2b-traffic-access-token} holding an E2B sandbox's {@code trafficAccessToken} (a grant of
 *       every port of its session while the sandbox lives and until its tokens are rotated), as E2B's users send it
 *       to {@code getHost(port)}; it is not passed on either.</li>
 * </ul>
 * Closed by its owner (the server). Thread-safe.
 */
public final class PreviewListener implements AutoCloseable {
    static final String COOKIE = PortProxy.PREVIEW_COOKIE;

    private final String domain;
    /** E2B's header for a sandbox's restricted traffic, carrying its {@code trafficAccessToken}. */
    public static final String TRAFFIC_HEADER = "e2b-traffic-access-token";
    private final PreviewTokens tokens;
    private final SessionManager sessions;
    private final InstantSource clock;
    private final Predicate<PreviewTokens.Grant> current;
    private Javalin app;

    private PreviewListener(String domain, PreviewTokens tokens, SessionManager sessions, InstantSource clock,
            Predicate<PreviewTokens.Grant> current) {
        this.current = current;
        this.domain = domain;
        this.tokens = tokens;
        this.sessions = sessions;
        this.clock = clock;
    }

    /**
     * Listens on {@code address} for the previews of {@code sessions} under {@code domain}, their links checked by
     * {@code tokens} (the API's: the links it makes open here).
     *
     * @param errors the answer to a request Jetty refuses before any handler sees it
     * @param current whether a token bound to a life (an E2B sandbox's traffic token) is still of it
     *     ({@link PreviewTokens#verify(String, long, Predicate)})
     * @throws io.javalin.util.JavalinBindException when the address cannot be bound
     */
    public static PreviewListener start(InetSocketAddress address, String domain, PreviewTokens tokens,
            SessionManager sessions, JsonMapper json, ErrorHandler errors, InstantSource clock,
            Predicate<PreviewTokens.Grant> current) {
        PreviewListener listener = new PreviewListener(domain, tokens, sessions, clock, current);
        listener.app = Javalin.create(cfg -> {
            cfg.concurrency.useVirtualThreads = true;
            cfg.jsonMapper(new JavalinJackson3(json, true));
            cfg.startup.showJavalinBanner = false;
            cfg.jetty.modifyServer(jetty -> {
                jetty.setStopAtShutdown(false); // close() stops it, once
                jetty.setErrorHandler(errors);
                AcceptQueue.deepen(jetty);
            });
            for (String method : PortRoutes.METHODS) {
                for (String path : List.of("/", "/<path>")) {
                    cfg.routes.addEndpoint(new Endpoint(HandlerType.findOrCreate(method), path, listener::serve));
                }
            }
            cfg.routes.exception(RequestException.class, (e, ctx) -> error(ctx, e.code(), e.getMessage(),
                    e.retryAfterSeconds()));
            cfg.routes.exception(Exception.class, (e, ctx) -> {
                System.getLogger("crucible.server").log(System.Logger.Level.ERROR, "internal error on a preview", e);
                error(ctx, ErrorCode.INTERNAL, "internal error; see the server log", 0);
            });
            cfg.jetty.modifyServletContextHandler(handler -> handler.addFilter(
                    new FilterHolder(UpgradePassThrough.everyPath()), "/*", EnumSet.of(DispatcherType.REQUEST)));
        }).start(address.getHostString(), address.getPort());
        return listener;
    }

    /** The port it listens on (the one bound, when asked for port 0). */
    public int port() {
        return app.port();
    }

    /** The host (with this listener's port) of {@code session}'s {@code port}: {@code {port}-{hex}.{domain}:{port}}. */
    public String host(String session, int port) {
        return PreviewHost.of(session, port).name(domain) + ":" + port();
    }

    @Override
    public void close() {
        app.stop();
    }

    /** Every request on every path: a link sets the cookie, a request with the cookie is proxied. */
    private void serve(Context ctx) throws Exception {
        PreviewHost host = PreviewHost.parse(ctx.header("Host"), domain);
        if (host == null) {
            throw new RequestException(ErrorCode.NOT_FOUND, "not a preview host: a preview is named"
                    + " {port}-{session}." + domain + " (open the url POST /v1/sessions/{id}/previews answers)");
        }
        String path = ctx.req().getRequestURI();
        LinkQuery query = LinkQuery.of(ctx.queryString());
        PreviewTokens.Grant grant;
        if (query.token() != null) {
            String token = query.token();
            grant = check(tokens.verify(token, clock.millis(), current), host);
            ctx.header("Set-Cookie", COOKIE + "=" + token + "; HttpOnly; SameSite=Lax; Path=/"); // host-only
            ctx.header("Cache-Control", "no-store");
            if (ctx.header("Sec-Fetch-Mode") == null) { // no browser: a client that may keep no cookie is answered here
                proxy(ctx, grant, host, path, query);
                return;
            }
            // "//x" or "/\x" would send a browser to host x: "/./" keeps it on this one, on the same path
            String safe = path.startsWith("//") || path.startsWith("/\\") ? "/." + path : path;
            ctx.redirect(safe + (query.rest() == null ? "" : "?" + query.rest()), HttpStatus.FOUND);
            return;
        }
        String traffic = ctx.header(TRAFFIC_HEADER); // E2B's restricted traffic: the sandbox's token, every port
        grant = traffic != null
                ? check(tokens.verify(traffic.strip(), clock.millis(), current), host) : fromCookie(ctx, host);
        proxy(ctx, grant, host, path, query);
    }

    /** Proxies the request to the port {@code host} names, without the link's token. */
    private void proxy(Context ctx, PreviewTokens.Grant grant, PreviewHost host, String path, LinkQuery query)
            throws Exception {
        SessionPorts ports;
        try {
            ports = sessions.ports(grant.owner(), grant.session());
        } catch (RequestException e) {
            throw new RequestException(ErrorCode.INVALID_PREVIEW, "this preview's session is gone");
        }
        String target = path + (query.rest() == null ? "" : "?" + query.rest());
        ctx.status(PortProxy.exchange(ctx.req(), ctx.res(), ports, host.port(), target, "",
                PortProxy.Origin.PREVIEW));
    }

    /** The grant of the first preview cookie valid for {@code host} (another preview's, tossed here, is passed over). */
    private PreviewTokens.Grant fromCookie(Context ctx, PreviewHost host) {
        RequestException refused = null;
        for (String header : Collections.list(ctx.req().getHeaders("Cookie"))) {
            for (String cookie : header.split(";")) {
                String c = cookie.strip();
                if (c.startsWith(COOKIE + "=")) {
                    try {
                        return check(tokens.verify(c.substring(COOKIE.length() + 1), clock.millis(), current), host);
                    } catch (RequestException e) {
                        refused = e;
                    }
                }
            }
        }
        throw refused != null ? refused : new RequestException(ErrorCode.INVALID_PREVIEW, "this preview opens only"
                + " through its link (the url POST /v1/sessions/{id}/previews answers), which sets its cookie: open it");
    }

    private static PreviewTokens.Grant check(PreviewTokens.Grant grant, PreviewHost host) {
        if (!host.grants(grant)) {
            throw new RequestException(ErrorCode.INVALID_PREVIEW, "this preview link is for another session or port"
                    + " than " + host.port() + "-" + host.hex() + ": open the link made for this one");
        }
        return grant;
    }

    private static void error(Context ctx, ErrorCode code, String message, int retryAfterSeconds) {
        if (retryAfterSeconds > 0) {
            ctx.header("Retry-After", Integer.toString(retryAfterSeconds));
        }
        ctx.status(code.httpStatus()).json(ErrorBody.of(code, message, retryAfterSeconds));
    }

    /**
     * A request's raw query split into the link's token ({@code crucible_preview}, its first value; null when none)
     * and the rest, as it came (null when nothing is left): the token never reaches the session's server.
     */
    record LinkQuery(String token, String rest) {
        static LinkQuery of(String raw) {
            if (raw == null) {
                return new LinkQuery(null, null);
            }
            String token = null;
            List<String> rest = new ArrayList<>();
            for (String part : raw.split("&", -1)) {
                int eq = part.indexOf('=');
                String name = decode(eq < 0 ? part : part.substring(0, eq));
                if (!COOKIE.equals(name)) {
                    rest.add(part);
                } else if (token == null) {
                    token = eq < 0 ? "" : decode(part.substring(eq + 1));
                }
            }
            return new LinkQuery(token, rest.isEmpty() ? null : String.join("&", rest));
        }

        private static String decode(String s) {
            try {
                return URLDecoder.decode(s, StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                return s; // a malformed escape is no name of ours: passed on as it came
            }
        }
    }
}
