package dev.crucible.server;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.http.Bodies;
import dev.crucible.server.http.ErrorBody;
import io.javalin.config.RoutesConfig;
import io.javalin.http.Context;
import java.util.Map;
import tools.jackson.core.JacksonException;

/**
 * Every failure becomes the API's JSON error, whatever threw it, in one place: a {@link RequestException} by its
 * code's status and {@code Retry-After}, a JSON parse error as {@code invalid_json}, anything else as a logged 500 that
 * no user input ever yields; unmatched routes and methods as 404 and 405.
 */
final class ErrorMapping {
    private static final System.Logger LOG = System.getLogger("crucible.server");

    private final Bodies bodies;

    ErrorMapping(Bodies bodies) {
        this.bodies = bodies;
    }

    void install(RoutesConfig routes) {
        routes.exception(RequestException.class, (e, ctx) -> error(ctx, e.code(), e.getMessage(), e.retryAfterSeconds()));
        routes.exception(JacksonException.class, (e, ctx) -> error(ctx, ErrorCode.INVALID_JSON,
                "the body is not valid JSON for this route: " + oneLine(e.getOriginalMessage())));
        routes.exception(InterruptedException.class, (e, ctx) -> {
            Thread.currentThread().interrupt();
            error(ctx, ErrorCode.SHUTTING_DOWN, "the server is shutting down");
        });
        routes.exception(Exception.class, (e, ctx) -> {
            Route route = Route.of(ctx);
            LOG.log(System.Logger.Level.ERROR, "internal error on " + (route == null ? ctx.path() : route.key()), e);
            error(ctx, ErrorCode.INTERNAL, "internal error; see the server log");
        });
        routes.error(404, ctx -> fallback(ctx, ErrorCode.NOT_FOUND, "no such route: " + ctx.method() + " " + ctx.path()));
        routes.error(405, ctx -> fallback(ctx, ErrorCode.METHOD_NOT_ALLOWED, ctx.method() + " is not allowed on "
                + ctx.path()));
    }

    private static String oneLine(String s) {
        String line = s == null ? "" : s.lines().findFirst().orElse("");
        return line.length() > 300 ? line.substring(0, 300) + "…" : line;
    }

    /** The answer to a refused request: the code's status, its {@code Retry-After} if it has one, the JSON error. */
    private void error(Context ctx, ErrorCode code, String message) {
        error(ctx, code, message, code.retryAfterSeconds());
    }

    private void error(Context ctx, ErrorCode code, String message, int retryAfterSeconds) {
        bodies.drainRefused(ctx);
        if (retryAfterSeconds > 0) {
            ctx.header("Retry-After", Integer.toString(retryAfterSeconds));
        }
        ctx.status(code.httpStatus()).json(errorBody(ctx, code, message, retryAfterSeconds));
        ctx.attribute(ErrorBody.ANSWERED, Boolean.TRUE);
    }

    /** Ours, {@code {"error": {code, message, retry_after_s?}}}; on Piston's routes Piston's own {@code {"message": …}}. */
    private static Object errorBody(Context ctx, ErrorCode code, String message, int retryAfterSeconds) {
        return ctx.path().startsWith("/api/v2/") ? Map.of("message", message)
                : ErrorBody.of(code, message, retryAfterSeconds);
    }

    /** A request no route matched (or one whose error the status handler would otherwise overwrite). */
    private void fallback(Context ctx, ErrorCode code, String message) {
        bodies.drainRefused(ctx);
        if (ctx.attribute(ErrorBody.ANSWERED) == null) {
            ctx.status(code.httpStatus()).json(errorBody(ctx, code, message, 0));
        }
    }
}
