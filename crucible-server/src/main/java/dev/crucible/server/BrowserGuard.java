package dev.crucible.server;

import dev.crucible.ErrorCode;
import dev.crucible.RequestException;
import io.javalin.http.Context;
import java.net.URI;
import java.util.List;
import java.util.Locale;

/**
 * What keeps a web page from driving the server through a visitor's browser, on every route:
 * <ul>
 *   <li><b>DNS rebinding</b>: when bound to loopback, the {@code Host} header must name loopback ({@code 127.0.0.1},
 *       {@code localhost}, {@code [::1]}, any port) — a page on {@code attacker.example} that rebinds its name to
 *       127.0.0.1 still sends {@code Host: attacker.example};</li>
 *   <li><b>cross-site requests</b>: an {@code Origin} header, when present, must be this server's own (loopback, or
 *       the host it is bound to); {@code Origin: null} is refused;</li>
 *   <li><b>CSRF without an Origin</b>: a {@code POST} must carry {@code Content-Type: application/json} or the
 *       {@code X-Crucible-Request} header — neither can be sent cross-site without a CORS preflight, which this
 *       server never grants. {@code PUT} and {@code DELETE} are always preflighted by browsers. The compatible
 *       routes ({@code /api/v2/}, {@code /run_code}, {@code /replit/eval}) serve clients we cannot change, and the
 *       Piston client from npm posts its JSON as {@code text/plain}: there a POST without JSON is taken only from a
 *       client that is not a browser — one that sends neither {@code Origin} nor {@code Sec-Fetch-Site}, which
 *       every current browser puts on every cross-site POST.</li>
 * </ul>
 * The same rules as the MCP transport's validator ({@link McpEndpoint.Allowed}). Stateless and thread-safe.
 */
final class BrowserGuard {
    static final String REQUEST_HEADER = "X-Crucible-Request";

    private final boolean loopback;
    private final List<String> names;

    BrowserGuard(String bindHost, boolean loopback) {
        this.loopback = loopback;
        this.names = loopback ? List.of("127.0.0.1", "localhost", "[::1]") : List.of(bindHost.toLowerCase(Locale.ROOT));
    }

    /** @throws RequestException 403 for a foreign Host or Origin, 415 for a POST a browser could send cross-site */
    void check(Context ctx) {
        if (loopback && !names.contains(hostName(ctx.header("Host")))) {
            throw new RequestException(ErrorCode.FORBIDDEN_HOST, "the Host header must name this server (127.0.0.1,"
                    + " localhost or [::1]) when it listens on loopback: a request for another name is a web page's"
                    + " (DNS rebinding)");
        }
        String origin = ctx.header("Origin");
        if (origin != null && !ownOrigin(origin)) {
            throw new RequestException(ErrorCode.FORBIDDEN_ORIGIN, "requests from the web origin '" + origin + "' are refused;"
                    + " call the API from a program, not from a page of another site");
        }
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

    private boolean ownOrigin(String origin) {
        try {
            URI uri = URI.create(origin.strip());
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
                return false;
            }
            String host = uri.getHost().toLowerCase(Locale.ROOT);
            return names.contains(host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
