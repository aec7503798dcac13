package dev.crucible.server.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.client.ToolOutcome;
import dev.crucible.client.Tools;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.eval.Judge;
import dev.crucible.eval.reward.Reward;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.server.access.Auth;
import dev.crucible.server.http.Bodies;
import dev.crucible.server.http.JsonObject;
import dev.crucible.server.http.RuntimeInfo;
import dev.crucible.server.services.Services;
import io.javalin.http.Context;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * The stateless routes: execute, evaluate, reward, runtimes and tool calls. Handlers only: the server's route table
 * registers them, behind its guard and token check; each throws {@code RequestException} for a refusal.
 */
public final class ApiRoutes {
    private final Services services;
    private final Bodies bodies;
    private final Auth auth;

    public ApiRoutes(Services services, Bodies bodies, Auth auth) {
        this.services = services;
        this.bodies = bodies;
        this.auth = auth;
    }

    /** One run, answered as JSON or streamed (SSE or NDJSON, by Accept), with a turn of the admission. */
    public void execute(Context ctx) throws Exception {
        Executor executor = services.executor();
        ExecuteRequest request = bodies.read(ctx, ExecuteRequest.class);
        // refused before any sandbox or turn is taken
        Executor.limitsFor(executor.runtimeFor(request), request);
        if (request.code() == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
        }
        String accept = ctx.header("Accept") == null ? "" : ctx.header("Accept").toLowerCase(Locale.ROOT);
        boolean sse = accept.contains("text/event-stream");
        boolean ndjson = accept.contains("application/x-ndjson");
        String owner = auth.owner(ctx.header("Authorization"));
        if (!sse && !ndjson) {
            ctx.json(services.run(owner, request));
            return;
        }
        try (AutoCloseable turn = services.admission().enter(owner, Services.turnTimeout(request))) {
            ctx.status(200).contentType(sse ? "text/event-stream; charset=utf-8" : "application/x-ndjson; charset=utf-8");
            ctx.header("Cache-Control", "no-cache");
            StreamWriter writer = new StreamWriter(ctx.res().getOutputStream(), sse, services.json());
            ExecuteResult result = executor.execute(request, writer);
            writer.result(result);
            services.metrics().verdict(result.status());
        }
    }

    /** Judging: each case takes its own turn at the sandbox (the admission counts runs, not requests). */
    public void evaluate(Context ctx) throws Exception {
        ctx.json(services.judge().evaluate(bodies.read(ctx, Judge.Request.class), gate(ctx)));
    }

    public void reward(Context ctx) throws Exception {
        ctx.json(services.reward().score(bodies.read(ctx, Reward.Request.class), gate(ctx)));
    }

    /** The caller's token's turns at the admission, one per run (a case, a batch's item). */
    private Judge.Gate gate(Context ctx) {
        String owner = auth.owner(ctx.header("Authorization"));
        Judge.Gate gate = timeoutMs -> services.admission().enter(owner, timeoutMs);
        return gate.atMost(services.admission().turns().limits().runningPerKey());
    }

    /** {@code {items: [reward request, …]}} → {@code {results: [...], mean_score}}, scored in parallel. */
    public void rewardBatch(Context ctx) throws Exception {
        record Batch(@JsonProperty("items") List<Reward.Request> items) {}
        List<Reward.Result> results = services.reward().scoreAll(bodies.read(ctx, Batch.class).items(), gate(ctx));
        ctx.json(JsonObject.of("results", results, "mean_score",
                results.stream().mapToDouble(Reward.Result::score).average().orElse(0)));
    }

    public void runtimes(Context ctx) {
        ctx.json(services.executor().runtimes().list().stream().map(RuntimeInfo::of).toList());
    }

    /** {@code ?format=openai|openai-functions|anthropic|mcp&set=stateless|session|all}: the tools for a model. */
    public void toolSchemas(Context ctx) {
        String format = ctx.queryParam("format") == null ? "openai" : ctx.queryParam("format");
        String set = ctx.queryParam("set") == null ? "all" : ctx.queryParam("set");
        try {
            ctx.json(Tools.render(Tools.of(Tools.Set.parse(set), services.tools().languages()), format));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
    }

    /**
     * {@code {name, arguments, session_id?}} → {@code {content: [{type, text | mime_type + data}], is_error, result?}}.
     * The model's mistakes are answers with {@code is_error: true}; only a body without a tool name is a 400.
     */
    public void toolCall(Context ctx) throws Exception {
        record Call(@JsonProperty("name") String name, @JsonProperty("arguments") JsonNode arguments,
                @JsonProperty("session_id") String sessionId) {}
        Call call = bodies.read(ctx, Call.class);
        if (call.name() == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "name is required: the tool the model called");
        }
        String owner = auth.owner(ctx.header("Authorization"));
        ToolOutcome outcome = services.tools().call(owner, call.name(), call.arguments(),
                o -> call.sessionId() == null || call.sessionId().isBlank() ? null : call.sessionId());
        List<Map<String, Object>> content = new ArrayList<>();
        for (ToolOutcome.Content c : outcome.content()) {
            content.add(switch (c) {
                case ToolOutcome.Content.Image i -> JsonObject.of("type", "image", "mime_type", i.mimeType(), "data", i.data());
                case ToolOutcome.Content.Text t -> JsonObject.of("type", "text", "text", t.text());
            });
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("content", content);
        answer.put("is_error", outcome.isError());
        if (outcome.result() != null) {
            answer.put("result", outcome.result());
        }
        ctx.json(answer);
    }
}
