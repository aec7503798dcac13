package dev.crucible.server;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * The web console (issue 32) at {@code /ui/}: a page and its two assets, all inside the JAR (the TypeScript page
 * modules of {@code src/main/console} on the TypeScript SDK, type-checked and bundled by esbuild into one script and one
 * style sheet; nothing is fetched at run time), served without a token (they hold nothing; the
 * API calls they make carry the tab's), under a Content-Security-Policy that admits one script: the page's own, by a
 * fresh nonce per page (never {@code 'self'}, which would admit whatever a session serves under {@code /v1/previews/}
 * on this origin), and styles from the server or with a second nonce (CodeMirror's and xterm.js's style elements,
 * read from the page's meta tag, so the script nonce is never in the DOM). {@code /} sends a browser there.
 */
final class ConsoleRoutes {
    private static final String ROOT = "/dev/crucible/server/ui/";
    private static final Map<String, String> ASSETS = Map.of(
            "console.js", "text/javascript; charset=utf-8", "console.css", "text/css; charset=utf-8");
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String PAGE = read("index.html");

    private ConsoleRoutes() {}

    static List<Route> routes() {
        return List.of(
                Route.get("/", Route.Access.PUBLIC, ConsoleRoutes::root),
                Route.get("/ui/", Route.Access.PUBLIC, ConsoleRoutes::page),
                Route.get("/ui/{asset}", Route.Access.PUBLIC, ConsoleRoutes::asset));
    }

    /** A browser (it asks for HTML) goes to the console; anything else gets the API's 404. */
    private static void root(Context ctx) {
        String accept = ctx.header("Accept");
        if (accept == null || !accept.contains("text/html")) {
            throw new RequestException(ErrorCode.NOT_FOUND, "no route GET /: the API is under /v1 (GET /openapi.json"
                    + " lists it), the console at /ui/");
        }
        ctx.redirect("/ui/");
    }

    private static void page(Context ctx) {
        String script = nonce();
        String style = nonce();
        secure(ctx, "'nonce-" + script + "'", " 'nonce-" + style + "'").header("Cache-Control", "no-store")
                .contentType("text/html; charset=utf-8")
                .result(PAGE.replace("{{SCRIPT_NONCE}}", script).replace("{{NONCE}}", style));
    }

    private static String nonce() {
        byte[] bytes = new byte[18];
        RANDOM.nextBytes(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    private static void asset(Context ctx) {
        String name = ctx.pathParam("asset");
        String type = ASSETS.get(name);
        if (type == null) {
            throw new RequestException(ErrorCode.NOT_FOUND, "the console has no " + name);
        }
        secure(ctx, "'none'", "").header("Cache-Control", "no-cache").contentType(type).result(stream(name));
    }

    /**
     * The headers every console response carries: scripts only by {@code scripts} (the page's nonce; {@code 'none'}
     * for an asset), styles from the server and {@code styleNonce} (empty, or {@code " 'nonce-…'"}).
     */
    private static Context secure(Context ctx, String scripts, String styleNonce) {
        return ctx.header("Content-Security-Policy", "default-src 'none'; script-src " + scripts + "; style-src 'self'"
                        + styleNonce + "; img-src 'self' data:; connect-src 'self';"
                        + " font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
                .header("X-Content-Type-Options", "nosniff").header("Referrer-Policy", "no-referrer")
                .header("Cross-Origin-Opener-Policy", "same-origin");
    }

    private static InputStream stream(String name) {
        InputStream in = ConsoleRoutes.class.getResourceAsStream(ROOT + name);
        if (in == null) {
            throw new IllegalStateException("the console's " + name + " is not in the JAR: build it (npm run build in"
                    + " crucible-server/src/main/console)");
        }
        return in;
    }

    private static String read(String name) {
        try (InputStream in = stream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
