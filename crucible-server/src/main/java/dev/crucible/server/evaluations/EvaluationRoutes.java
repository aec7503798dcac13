package dev.crucible.server.evaluations;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.access.Auth;
import dev.crucible.server.http.Bodies;
import dev.crucible.server.http.JsonObject;
import io.javalin.http.Context;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;

/**
 * The evaluation routes' handlers (the server's route table names them): start, list, one, its results, delete. Each
 * acts for the token of the request ({@link Auth#owner}).
 */
public final class EvaluationRoutes {
    private final EvaluationRuns runs;
    private final Auth auth;
    private final Bodies bodies;

    public EvaluationRoutes(EvaluationRuns runs, Auth auth, Bodies bodies) {
        this.runs = runs;
        this.auth = auth;
        this.bodies = bodies;
    }

    /** {@code POST /v1/evaluations} → 202 with the run, judged in the background. */
    public void start(Context ctx) throws Exception {
        EvaluationInfo info = runs.start(owner(ctx), bodies.read(ctx, EvaluationRequest.class));
        ctx.status(202).header("Location", "/v1/evaluations/" + info.id()).json(info);
    }

    /** {@code GET /v1/evaluations}: the token's runs, newest first. */
    public void list(Context ctx) throws Exception {
        ctx.json(Map.of("evaluations", runs.list(owner(ctx))));
    }

    /** {@code GET /v1/evaluations/{id}}. */
    public void get(Context ctx) throws Exception {
        ctx.json(runs.get(owner(ctx), ctx.pathParam("id")));
    }

    /** {@code GET /v1/evaluations/{id}/results}: the results file as far as it has got (NDJSON). */
    public void results(Context ctx) throws Exception {
        Path results = runs.results(owner(ctx), ctx.pathParam("id"));
        ctx.contentType("application/x-ndjson; charset=utf-8");
        if (results == null) {
            ctx.result("");
            return;
        }
        try {
            ctx.result(Files.newInputStream(results));
        } catch (NoSuchFileException e) {
            throw new RequestException(ErrorCode.NOT_FOUND, "evaluation " + ctx.pathParam("id") + " was deleted");
        }
    }

    /** {@code DELETE /v1/evaluations/{id}}: stopped if it goes on, and forgotten with its files. */
    public void delete(Context ctx) throws Exception {
        runs.delete(owner(ctx), ctx.pathParam("id"));
        ctx.json(JsonObject.of("id", ctx.pathParam("id"), "deleted", true));
    }

    private String owner(Context ctx) {
        return auth.owner(ctx.header("Authorization"));
    }
}
