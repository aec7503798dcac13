package dev.crucible.server.ports;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.IOException;
import java.util.Collections;
import java.util.Enumeration;
import java.util.regex.Pattern;

/**
 * Lets a WebSocket upgrade to a port reach the proxy. Javalin sends every request that carries
 * {@code Sec-WebSocket-Version} to its own WebSocket endpoints (the terminal's), where a proxied path matches none; on
 * the port and preview paths this filter hides that one field from Javalin and keeps its value for the proxy, which
 * passes the upgrade on to the session's server as it came ({@link #version}). On a listener of previews' own every
 * path is proxied ({@link #everyPath()}).
 */
public final class UpgradePassThrough implements Filter {
    private static final String HEADER = "Sec-WebSocket-Version";
    private static final String ATTRIBUTE = "crucible.websocket-version";
    private static final Pattern PROXIED = Pattern.compile("^/v1/(sessions/[^/]+/ports/[^/]+|previews/[^/]+)(/.*)?$");

    /** Null when every path is proxied (a listener of previews' own), else the proxied paths of the API's listener. */
    private final Pattern proxied;

    /** For the API's listener: only the port and preview paths are proxied, the terminal's upgrades stay Javalin's. */
    public UpgradePassThrough() {
        this(PROXIED);
    }

    private UpgradePassThrough(Pattern proxied) {
        this.proxied = proxied;
    }

    /** For a listener whose every path is proxied ({@link PreviewListener}): it has no WebSocket of its own. */
    static UpgradePassThrough everyPath() {
        return new UpgradePassThrough(null);
    }

    /** The {@code Sec-WebSocket-Version} the client sent, hidden from Javalin by this filter; null when none. */
    static String version(HttpServletRequest req) {
        Object kept = req.getAttribute(ATTRIBUTE);
        return kept != null ? kept.toString() : req.getHeader(HEADER);
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (request instanceof HttpServletRequest req && req.getHeader(HEADER) != null
                && (proxied == null || proxied.matcher(req.getRequestURI()).matches())) {
            req.setAttribute(ATTRIBUTE, req.getHeader(HEADER));
            chain.doFilter(new HttpServletRequestWrapper(req) {

                @Override
                public String getHeader(String name) {
                    return HEADER.equalsIgnoreCase(name) ? null : super.getHeader(name);
                }

                @Override
                public Enumeration<String> getHeaders(String name) {
                    return HEADER.equalsIgnoreCase(name) ? Collections.emptyEnumeration() : super.getHeaders(name);
                }

                @Override
                public Enumeration<String> getHeaderNames() {
                    return Collections.enumeration(Collections.list(super.getHeaderNames()).stream()
                            .filter(n -> !HEADER.equalsIgnoreCase(n)).toList());
                }
            }, response);
            return;
        }
        chain.doFilter(request, response);
    }
}
