package dev.crucible.server.access;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * A web origin as a browser sends it in {@code Origin}: scheme ({@code http} or {@code https}), host and port, in one
 * canonical form — lower case, an IPv6 host in brackets, the port always written (80 or 443 when the scheme's default
 * was left out) — so that two spellings of one origin compare equal. Immutable.
 *
 * @param scheme {@code http} or {@code https}
 * @param host a name, an IPv4 literal or a bracketed IPv6 literal, lower case
 * @param port 1-65535
 */
public record WebOrigin(String scheme, String host, int port) {
    /**
     * The origin an operator listed ({@code serve --allowed-origin}).
     *
     * @throws IllegalArgumentException when {@code text} is not {@code SCHEME://HOST[:PORT]}, naming it and the form
     */
    public static WebOrigin parse(String text) {
        WebOrigin origin = ofHeader(text);
        if (origin == null) {
            throw new IllegalArgumentException("an allowed origin is http(s)://HOST[:PORT] exactly as a browser sends"
                    + " it, without a path or a trailing slash (https://app.example.com, http://localhost:3000), not '"
                    + text + "'");
        }
        return origin;
    }

    /** The origin an {@code Origin} header names; null for anything else ({@code null}, a path, another scheme). */
    static WebOrigin ofHeader(String text) {
        if (text == null) {
            return null;
        }
        try {
            URI uri = new URI(text.strip());
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            int port = uri.getPort() >= 0 ? uri.getPort() : scheme.equals("https") ? 443 : 80;
            boolean bare = uri.getRawUserInfo() == null && uri.getRawPath() != null && uri.getRawPath().isEmpty()
                    && uri.getRawQuery() == null && uri.getRawFragment() == null;
            if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null || !bare || port < 1
                    || port > 65535) {
                return null;
            }
            return new WebOrigin(scheme, bracketed(uri.getHost()), port);
        } catch (URISyntaxException e) {
            return null;
        }
    }

    /** This server's own origin at {@code host} (a name or an address, bracketed or not) and {@code port}. */
    static WebOrigin http(String host, int port) {
        return new WebOrigin("http", bracketed(host), port);
    }

    /** A host in canonical form: lower case, an IPv6 literal in brackets. */
    static String bracketed(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        return h.contains(":") && !h.startsWith("[") ? "[" + h + "]" : h;
    }

    /** {@code scheme://host:port}, the port always written. */
    @Override
    public String toString() {
        return scheme + "://" + host + ":" + port;
    }
}
