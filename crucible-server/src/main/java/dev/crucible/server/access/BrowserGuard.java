package dev.crucible.server.access;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import io.javalin.http.Context;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What keeps a web page from driving the server through a visitor's browser, on every route:
 * <ul>
 *   <li><b>DNS rebinding</b>: when bound to loopback, the {@code Host} header must name loopback ({@code 127.0.0.1},
 *       {@code localhost}, {@code [::1]}, any port: a client may come through a port forward) — a page on
 *       {@code attacker.example} that rebinds its name to 127.0.0.1 still sends {@code Host: attacker.example}. A
 *       request without any {@code Host} (HTTP/1.0, as a balancer's default health check sends) cannot come from a
 *       browser, which always sends one, and is let through; an empty or foreign one is not;</li>
 *   <li><b>cross-site requests</b>: an {@code Origin} header, when present, must be exactly this server's own —
 *       {@code http://}, one of its names (the loopback names, or the host it is bound to) and the port the request
 *       came in on (80 may be left out) — or one the operator listed ({@code serve --allowed-origin}); a page on
 *       another port of the same machine is another origin, and {@code Origin: null} is refused;</li>
 *   <li><b>CSRF without an Origin</b>: a {@code POST} must carry {@code Content-Type: application/json} or the
 *       {@code X-Crucible-Request} header — neither can be sent cross-site without a CORS preflight, which this
 *       server never grants. {@code PUT} and {@code DELETE} are always preflighted by browsers. The compatible
 *       routes ({@code /api/v2/}, {@code /run_code}, {@code /replit/eval}) serve clients we cannot change, and the
 *       Piston client from npm posts its JSON as {@code text/plain}: there a POST without JSON is taken only from a
 *       client that is not a browser — one that sends neither {@code Origin} nor {@code Sec-Fetch-Site}, which
 *       every current browser puts on every cross-site POST.</li>
 * </ul>
 * {@code /mcp} gets the Host and Origin rules ({@link #checkHostAndOrigin}) in its servlet filter. Stateless and
 * thread-safe.
 */
public final class BrowserGuard {
    static final String REQUEST_HEADER = "X-Crucible-Request";

    private final boolean loopback;
    private final List<String> names;
    private final Set<WebOrigin> listed;

    /**
     * @param bindHost the address the server listens on
     * @param loopback whether that is a loopback address
     * @param allowedOrigins more origins to accept, each {@code http(s)://HOST[:PORT]} (the operator's list)
     * @throws IllegalArgumentException for a malformed origin in {@code allowedOrigins}
     */
    public BrowserGuard(String bindHost, boolean loopback, List<String> allowedOrigins) {
        this.loopback = loopback;
        this.names = loopback ? List.of("127.0.0.1", "localhost", "[::1]") : List.of(WebOrigin.bracketed(bindHost));
        this.listed = allowedOrigins.stream().map(WebOrigin::parse).collect(Collectors.toUnmodifiableSet());
    }

    /** @throws RequestException 403 for a foreign Host or Origin, 415 for a POST a browser could send cross-site */
    public void check(Context ctx) {
        String origin = ctx.header("Origin");
        checkHostAndOrigin(ctx.header("Host"), origin, ctx.req().getLocalPort());
        if (ctx.method().name().equals("POST") && ctx.header(REQUEST_HEADER) == null) {
            String type = ctx.header("Content-Type");
            boolean json = type != null && type.toLowerCase(Locale.ROOT).startsWith("application/json");
            boolean notBrowser = origin == null && ctx.header("Sec-Fetch-Site") == null
                    && ctx.header("Sec-Fetch-Mode") == null;
            if (!json && !(compatible(ctx.path()) && notBrowser)) {
                throw new RequestException(ErrorCode.UNSUPPORTED_MEDIA_TYPE, "a POST must be sent with Content-Type:"
                        + " application/json (or the header " + REQUEST_HEADER + ": 1 when it has no JSON body)");
            }
        }
    }

    /**
     * The Host and Origin rules alone.
     *
     * @param host the {@code Host} header; null when the request has none
     * @param origin the {@code Origin} header, or null
     * @param port the port the request came in on (this server's: the one it bound, even when started on port 0)
     * @throws RequestException 403 {@code forbidden_host} or {@code forbidden_origin}
     */
    public void checkHostAndOrigin(String host, String origin, int port) {
        if (loopback && host != null && !names.contains(hostName(host))) {
            throw new RequestException(ErrorCode.FORBIDDEN_HOST, "the Host header must name this server (127.0.0.1,"
                    + " localhost or [::1]) when it listens on loopback: a request for another name is a web page's"
                    + " (DNS rebinding)");
        }
        if (origin != null && !allowed(WebOrigin.ofHeader(origin), port)) {
            throw new RequestException(ErrorCode.FORBIDDEN_ORIGIN, "requests from the web origin '" + origin + "' are"
                    + " refused: call the API from a program, not from a page of another site (or, for a page of your"
                    + " own, list its origin with serve --allowed-origin)");
        }
    }

    private boolean allowed(WebOrigin origin, int port) {
        return origin != null && (listed.contains(origin)
                || origin.scheme().equals("http") && origin.port() == port && names.contains(origin.host()));
    }

    private static boolean compatible(String path) {
        return path.startsWith("/api/v2/") || path.equals("/run_code") || path.equals("/replit/eval");
    }

    /** The host part of a Host header, lower case, without the port; "" when absent or malformed. */
    static String hostName(String host) {
        if (host == null) {
            return "";
        }
        String h = host.strip().toLowerCase(Locale.ROOT);
        if (h.startsWith("[")) {
            int end = h.indexOf(']');
            return end < 0 ? "" : h.substring(0, end + 1);
        }
        int colon = h.indexOf(':');
        return colon < 0 ? h : h.substring(0, colon);
    }
}
