package dev.crucible.server.services;

import dev.crucible.Crucible;
import dev.crucible.eval.Judge;
import dev.crucible.eval.reward.Reward;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.sandbox.Limits;
import dev.crucible.server.access.Admission;
import dev.crucible.server.access.Fairness;
import dev.crucible.server.evaluations.EvaluationRuns;
import dev.crucible.server.metrics.Metrics;
import dev.crucible.server.tools.ToolDispatcher;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.util.FairTurns;
import java.io.IOException;
import java.time.InstantSource;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one place where what runs on the engine is built: sessions, judging, rewards, tool calls, the admission of
 * stateless runs and their metrics. Each front end (the HTTP server, {@code crucible mcp}, {@code crucible session},
 * the one-shot CLI commands) is handed these instead of building its own. Closing it stops the sessions'
 * interpreters (their files stay for the next start); the engine belongs to whoever started it.
 *
 * <pre>{@code
 * try (Crucible engine = Crucible.start(SandboxConfig.defaults(), null);
 *      Services services = Services.start(engine, SessionConfig.defaults(dataDir), Services.Turns.of(4, 64))) {
 *     services.sessions().create(owner, request);
 * }
 * }</pre>
 */
public final class Services implements AutoCloseable {
    /**
     * The turns of stateless runs and of session creates (how many at once, how many more may wait, what one token may
     * hold and queue), and how long a create waits for its turn.
     */
    public record Turns(FairTurns.Limits runs, FairTurns.Limits creates, long createWaitMs) {
        /** {@code running} runs at once and {@code queued} waiting; creates as {@link Fairness#defaults()} says. */
        public static Turns of(int running, int queued) {
            Fairness d = Fairness.defaults();
            return new Turns(d.runs(running, queued), d.creates(), d.createWaitMs());
        }
    }

    private final Crucible engine;
    private final SessionManager sessions;
    private final Judge judge;
    private final Reward reward;
    private final Admission admission;
    private final Metrics metrics;
    private final JsonMapper json;
    private final ToolDispatcher tools;
    private EvaluationRuns evaluations;

    private Services(Crucible engine, SessionManager sessions, Turns turns, InstantSource clock) {
        this.engine = engine;
        this.sessions = sessions;
        this.judge = new Judge(engine.executor());
        this.reward = new Reward(judge);
        this.json = JsonMapper.builder().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
        // a one-shot command (no sessions) serves nothing: no admission, no metrics registry to build at start-up
        this.admission = sessions == null ? null : new Admission(turns.runs(), clock);
        if (sessions != null) {
            sessions.admitCreates(new FairTurns("session creates", turns.creates()), turns.createWaitMs());
        }
        this.metrics = sessions == null ? null : new Metrics(admission, engine.executor(), engine.sandbox().replacements());
        this.tools = sessions == null ? null : new ToolDispatcher(engine.executor(), sessions, this::run, json);
        if (sessions != null) {
            metrics.countSessions(sessions);
        }
    }

    /**
     * Everything, sessions included: loads the sessions kept under {@code sessionConfig}'s data directory.
     *
     * @throws IOException when the data directory cannot be used
     */
    public static Services start(Crucible engine, SessionConfig sessionConfig, Turns turns) throws IOException {
        return start(engine, sessionConfig, turns, InstantSource.system());
    }

    /**
     * As {@link #start(Crucible, SessionConfig, Turns)}, as replica {@code replica} of several (session ids carry
     * its name; null: a single node).
     */
    public static Services start(Crucible engine, SessionConfig sessionConfig, Turns turns, String replica)
            throws IOException {
        return start(engine, sessionConfig, turns, InstantSource.system(), replica);
    }

    /** As {@link #start(Crucible, SessionConfig, Turns)}, with {@code clock} for session times and admission waits. */
    public static Services start(Crucible engine, SessionConfig sessionConfig, Turns turns, InstantSource clock)
            throws IOException {
        return start(engine, sessionConfig, turns, clock, null);
    }

    private static Services start(Crucible engine, SessionConfig sessionConfig, Turns turns, InstantSource clock,
            String replica) throws IOException {
        SessionManager sessions = SessionManager.start(engine.sandbox(), engine.runtimes(), sessionConfig, clock,
                replica);
        sessions.useEgress(engine.executor().egress());
        Services services = new Services(engine, sessions, turns, clock);
        services.evaluations = new EvaluationRuns(sessionConfig.dataDir(), services.judge,
                services.admission::maxRunning, services.json, clock);
        return services;
    }

    /** Judging and rewards only, no sessions (nothing is kept on disk), nothing served: one-shot commands. */
    public static Services stateless(Crucible engine) {
        return new Services(engine, null, null, InstantSource.system());
    }

    public Crucible engine() {
        return engine;
    }

    public Executor executor() {
        return engine.executor();
    }

    /** @throws IllegalStateException when started {@link #stateless} */
    public SessionManager sessions() {
        if (sessions == null) {
            throw new IllegalStateException("these services were started without sessions");
        }
        return sessions;
    }

    public Judge judge() {
        return judge;
    }

    /**
     * The dataset evaluations this server runs ({@code /v1/evaluations}).
     *
     * @throws IllegalStateException when started {@link #stateless}
     */
    public EvaluationRuns evaluations() {
        sessions();
        return evaluations;
    }

    public Reward reward() {
        return reward;
    }

    /**
     * The tool calls of a model ({@code /v1/tools/call}, MCP).
     *
     * @throws IllegalStateException when started {@link #stateless}
     */
    public ToolDispatcher tools() {
        sessions();
        return tools;
    }

    /**
     * The turns of stateless runs.
     *
     * @throws IllegalStateException when started {@link #stateless}
     */
    public Admission admission() {
        sessions();
        return admission;
    }

    /**
     * What {@code GET /metrics} reports.
     *
     * @throws IllegalStateException when started {@link #stateless}
     */
    public Metrics metrics() {
        sessions();
        return metrics;
    }

    /**
     * The server's JSON mapper, lenient (unknown properties ignored): what the compatible APIs (Piston, SandboxFusion,
     * Replit, E2B, MCP) and tool arguments are read with, as their originals take them. Crucible's own bodies are read
     * through {@code Bodies}, which refuses unknown fields.
     */
    public JsonMapper json() {
        return json;
    }

    /** One stateless run with a turn of the admission, counted in the metrics, as {@code /v1/execute} takes it. */
    public ExecuteResult run(ExecuteRequest request) throws Exception {
        return run("", request);
    }

    /** As {@link #run(ExecuteRequest)}, with a turn of {@code owner}'s (turns are shared fairly between owners). */
    public ExecuteResult run(String owner, ExecuteRequest request) throws Exception {
        try (AutoCloseable turn = admission.enter(owner, turnTimeout(request))) {
            ExecuteResult result = engine.executor().execute(request);
            metrics.verdict(result.status());
            return result;
        }
    }

    /**
     * How long a request's run may take by its own limits (the default's when it sets none): the bound of its wait for a
     * turn, with the grace.
     */
    public static long turnTimeout(ExecuteRequest request) {
        return request.limits() != null && request.limits().timeoutMs() != null ? request.limits().timeoutMs()
                : Limits.DEFAULT.timeoutMs();
    }

    /** Stops the sessions' interpreters; their files stay. The engine is left to its owner. */
    @Override
    public void close() {
        if (evaluations != null) {
            evaluations.close(); // each run recorded as stopped, what it judged kept
        }
        if (sessions != null) {
            sessions.close();
        }
    }
}
