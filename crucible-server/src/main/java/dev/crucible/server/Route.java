package dev.crucible.server;

import io.javalin.http.Context;
import io.javalin.http.Handler;
import io.javalin.http.HandlerType;
import io.javalin.router.Endpoint;
import io.javalin.router.EndpointMetadata;
import java.util.List;
import java.util.Set;

/**
 * One route of the API: its method, its path as the OpenAPI document writes it ({@code {path}} may hold slashes),
 * who may call it and its handler. The server's table of these drives registration, the metrics' route names and
 * the check against the OpenAPI document; a new route is one line of the table.
 */
record Route(HandlerType method, String path, Access access, Handler handler) implements EndpointMetadata {
    /** Who may call a route: checked once, before the handler, for every route. */
    enum Access {
        /** Anyone that passes the browser guard (health, the OpenAPI document). */
        PUBLIC,
        /** A bearer token from the server's list, when it has one. */
        TOKEN,
        /**
         * A bearer token, as {@link #TOKEN}, for a request that goes on to a session's own server: its body is the
         * application's, of any type (the browser guard's Host and Origin rules still apply; a POST needs no JSON).
         */
        PORT,
        /**
         * A preview link: the signed token in the path is the credential, and the page it serves (an opaque origin)
         * sends {@code Origin: null} and forms: only the Host rule of the browser guard applies.
         */
        PREVIEW
    }

    /** The same handler under every method a proxied request may have ({@code methods}), at {@code path}. */
    static List<Route> each(List<String> methods, String path, Access access, Handler handler) {
        return methods.stream().map(m -> new Route(HandlerType.findOrCreate(m), path, access, handler)).toList();
    }

    static Route get(String path, Access access, Handler handler) {
        return new Route(HandlerType.GET, path, access, handler);
    }

    static Route post(String path, Access access, Handler handler) {
        return new Route(HandlerType.POST, path, access, handler);
    }

    static Route put(String path, Access access, Handler handler) {
        return new Route(HandlerType.PUT, path, access, handler);
    }

    static Route delete(String path, Access access, Handler handler) {
        return new Route(HandlerType.DELETE, path, access, handler);
    }

    /** {@code "METHOD path"}, as the OpenAPI document lists operations. */
    String key() {
        return method.name() + " " + path;
    }

    /**
     * The Javalin endpoint, carrying this route as its metadata (the before-handler and the metrics read it back
     * from the matched endpoint). {@code <path>} is Javalin's syntax for a parameter that takes slashes.
     */
    Endpoint endpoint() {
        return new Endpoint(method, path.replace("{path}", "<path>"), handler, Set.of(this));
    }

    /** The route a request matched, or null when it matched none. */
    static Route of(Context ctx) {
        Endpoint matched = ctx.endpoints().matchedHttpEndpoint();
        return matched == null ? null : matched.metadata(Route.class);
    }
}
