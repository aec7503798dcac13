package dev.crucible.server.http;

import jakarta.servlet.http.HttpServletResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/**
 * The fields of every answer that carries a session's bytes as they are (a file downloaded through the files API or
 * E2B's envd): {@code application/octet-stream}, {@code Content-Disposition: attachment} (a browser saves it, never
 * renders it on the API's origin), {@code X-Content-Type-Options: nosniff} (never read as HTML or script) and
 * {@code Content-Security-Policy: sandbox} (were it rendered anyway, an opaque origin without scripts).
 */
public final class Download {
    /** The CSP of a download: no script, no form, no same origin. */
    public static final String CSP = "sandbox; default-src 'none'";

    private Download() {}

    /** Sets a download's fields on {@code res}, its file name from the last segment of {@code path}. */
    public static void fence(HttpServletResponse res, String path) {
        res.setContentType("application/octet-stream");
        res.setHeader("Content-Disposition", disposition(path));
        res.setHeader("X-Content-Type-Options", "nosniff");
        res.setHeader("Content-Security-Policy", CSP);
        res.setHeader("Cache-Control", "no-store");
    }

    /**
     * {@code attachment} with the last segment of {@code path} as the file name: an ASCII fallback ({@code filename},
     * every character but letters, digits, {@code . - _} as {@code _}, never starting with a dot) and the name itself
     * in UTF-8 ({@code filename*}, RFC 6266), so no quote, separator or control character reaches the field.
     */
    public static String disposition(String path) {
        String name = path == null ? "" : path.substring(path.lastIndexOf('/') + 1);
        StringBuilder ascii = new StringBuilder(name.length());
        name.codePoints().forEach(c -> ascii.append(c < 128 && (Character.isLetterOrDigit(c) || c == '.' || c == '-'
                || c == '_') ? (char) c : '_'));
        String fallback = ascii.toString().replaceFirst("^\\.+", "");
        if (fallback.isEmpty()) {
            return "attachment; filename=\"download\"";
        }
        return "attachment; filename=\"" + fallback + "\"; filename*=UTF-8''"
                + URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20").replace("*", "%2A");
    }
}
