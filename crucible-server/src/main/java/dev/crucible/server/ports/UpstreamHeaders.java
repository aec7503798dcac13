package dev.crucible.server.ports;

import jakarta.servlet.http.HttpServletResponse;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

/**
 * Which fields of a session's server's answer reach the browser: an allow list, never a deny list, so a field a
 * browser learns to obey tomorrow ({@code Clear-Site-Data}, {@code Service-Worker-Allowed}, {@code Link} with a
 * service worker…) is dropped until it is named here. Framing ({@code Content-Length}, {@code Transfer-Encoding}) is
 * {@link PortProxy}'s, the upgrade's {@code Upgrade} and {@code Connection} are set by it.
 *
 * <p>On the API's origin ({@link PortProxy.Origin#API}) only what describes the answer itself passes, and the fence
 * ({@code CSP: sandbox}, {@code nosniff}, {@code no-referrer}) is set over it. On a preview origin of its own
 * ({@link PortProxy.Origin#PREVIEW}) the application also governs its own origin: its CSP, CORS, isolation fields and
 * cookies, but a cookie only when it is host-only and not the listener's own {@code crucible_preview} (a
 * {@code Domain} cookie would reach every other preview under the preview domain, and the API's host when they share
 * a registrable domain). {@code Clear-Site-Data} never passes: its {@code "cookies"} clears the whole registrable
 * domain, never one origin.
 */
final class UpstreamHeaders {
    /** What describes the answer itself: passed on every origin. */
    private static final Set<String> ANSWER = Set.of("content-type", "content-encoding", "content-language",
            "content-disposition", "content-range", "accept-ranges", "cache-control", "expires", "age", "etag",
            "last-modified", "vary", "location", "retry-after", "allow",
            "sec-websocket-accept", "sec-websocket-protocol", "sec-websocket-extensions");

    /** What an application says of its own origin: passed only on a preview origin of its own. */
    private static final Set<String> OWN_ORIGIN = Set.of("content-security-policy",
            "content-security-policy-report-only", "access-control-allow-origin",
            "access-control-allow-credentials", "access-control-allow-methods", "access-control-allow-headers",
            "access-control-expose-headers", "access-control-max-age", "cross-origin-opener-policy",
            "cross-origin-embedder-policy", "cross-origin-resource-policy", "permissions-policy", "x-frame-options",
            "x-content-type-options", "www-authenticate", "set-cookie");

    private UpstreamHeaders() {}

    /** Whether the field {@code name: value} may reach a browser on {@code origin}. */
    static boolean passes(String name, String value, PortProxy.Origin origin) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (ANSWER.contains(lower)) {
            return true;
        }
        if (origin != PortProxy.Origin.PREVIEW || !OWN_ORIGIN.contains(lower)) {
            return false;
        }
        return !lower.equals("set-cookie") || hostOnlyAndNotOurs(value);
    }

    /** A cookie without a {@code Domain} attribute, not named as the listener's own. */
    static boolean hostOnlyAndNotOurs(String setCookie) {
        String[] parts = setCookie.split(";");
        String name = parts[0].strip();
        int eq = name.indexOf('=');
        if (eq < 0 || name.substring(0, eq).strip().equalsIgnoreCase(PortProxy.PREVIEW_COOKIE)) {
            return false;
        }
        for (int i = 1; i < parts.length; i++) {
            if (parts[i].strip().toLowerCase(Locale.ROOT).startsWith("domain")) {
                return false;
            }
        }
        return true;
    }

    /** Copies the fields that pass onto {@code res} (the first of a name over the server's defaults); fences the API's. */
    static void copy(UpstreamResponse head, HttpServletResponse res, PortProxy.Origin origin) {
        Set<String> seen = new HashSet<>();
        for (UpstreamResponse.Field f : head.headers()) {
            if (!passes(f.name(), f.value(), origin)) {
                continue;
            }
            if (seen.add(f.name().toLowerCase(Locale.ROOT))) {
                res.setHeader(f.name(), f.value()); // over the server's defaults (Javalin's text/plain)
            } else {
                res.addHeader(f.name(), f.value());
            }
        }
        if (origin == PortProxy.Origin.API) {
            res.setHeader("Content-Security-Policy", PortProxy.CSP);
            res.setHeader("X-Content-Type-Options", "nosniff");
            res.setHeader("Referrer-Policy", "no-referrer");
        }
    }
}
