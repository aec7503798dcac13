package dev.crucible.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Java SDK of the Crucible HTTP API: stateless execution, sessions and their files, judging, rewards and the LLM
 * tools. Thread-safe; one instance per server is enough. Every failure is a {@link CrucibleException} carrying the
 * HTTP status and the server's error code.
 *
 * <pre>{@code
 * CrucibleClient crucible = CrucibleClient.create(URI.create("http://127.0.0.1:8080"), System.getenv("CRUCIBLE_TOKEN"));
 * ExecuteResult r = crucible.execute(ExecuteRequest.of("python", "print(6 * 7)"));
 * System.out.print(r.stdout()); // 42
 * Session session = crucible.sessions().create(Session.Request.of("python"));
 * session.run("x = 41");
 * System.out.print(session.run("x + 1").result()); // 42
 * session.delete();
 * }</pre>
 */
public final class CrucibleClient {
    /** How long a call may take unless {@link #create(URI, String, Duration)} says otherwise. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(2);

    static final JsonMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .changeDefaultPropertyInclusion(i -> i.withValueInclusion(JsonInclude.Include.NON_NULL))
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .build();

    private final Transport http;
    private final Sessions sessions = new Sessions();

    private CrucibleClient(URI base, String token, Duration timeout) {
        this.http = new Transport(base, token, timeout);
    }

    /** A client of the server at {@code base} (e.g. {@code http://127.0.0.1:8080}); {@code token} may be null. */
    public static CrucibleClient create(URI base, String token) {
        return create(base, token, DEFAULT_TIMEOUT);
    }

    /** As {@link #create(URI, String)}, with the longest a single call may take. */
    public static CrucibleClient create(URI base, String token, Duration timeout) {
        if (base == null || base.getScheme() == null || base.getHost() == null) {
            throw new IllegalArgumentException("the server URI needs a scheme and a host, e.g. http://127.0.0.1:8080");
        }
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the timeout must be positive");
        }
        return new CrucibleClient(base, token, timeout);
    }

    public URI base() {
        return http.base();
    }

    // -- stateless execution ------------------------------------------------------------------------------------

    public ExecuteResult execute(ExecuteRequest request) {
        return call("POST", "/v1/execute", request, new TypeReference<>() {});
    }

    public List<RuntimeInfo> runtimes() {
        return call("GET", "/v1/runtimes", null, new TypeReference<>() {});
    }

    // -- sessions -----------------------------------------------------------------------------------------------

    /** The sessions of this client's token: {@code sessions().create(…)}, {@code open(id)}, {@code list()}. */
    public Sessions sessions() {
        return sessions;
    }

    /** The sessions of this client's token, and their snapshots. */
    public final class Sessions {
        private Sessions() {}

        /** A new session in Python with the server's defaults. */
        public Session create() {
            return create(Session.Request.of(null));
        }

        /** A new session with every option of {@code POST /v1/sessions}. */
        public Session create(Session.Request request) {
            SessionInfo info = http.call("POST", "/v1/sessions", request, new TypeReference<>() {});
            return new Session(http, info.id(), info);
        }

        /** A handle on the session {@code id}, without a call ({@link Session#refresh} fetches it). */
        public Session open(String id) {
            return new Session(http, id, null);
        }

        /** The session {@code id} as the server describes it now (404 {@code session_not_found} if gone). */
        public Session get(String id) {
            Session session = open(id);
            session.refresh();
            return session;
        }

        public List<SessionInfo> list() {
            record Page(List<SessionInfo> sessions) {}
            return http.call("GET", "/v1/sessions", null, new TypeReference<Page>() {}).sessions();
        }

        /** This token's snapshots, oldest first. */
        public List<SessionInfo.Snapshot> snapshots() {
            record Page(List<SessionInfo.Snapshot> snapshots) {}
            return http.call("GET", "/v1/snapshots", null, new TypeReference<Page>() {}).snapshots();
        }

        public void deleteSnapshot(String name) {
            http.call("DELETE", "/v1/snapshots/" + Transport.segment(name), null, new TypeReference<JsonNode>() {});
        }
    }

    // -- judging and rewards ------------------------------------------------------------------------------------

    public Evaluation.Result evaluate(Evaluation.Request request) {
        return call("POST", "/v1/evaluate", request, new TypeReference<>() {});
    }

    public Rewards.Result reward(Rewards.Request request) {
        return call("POST", "/v1/reward", request, new TypeReference<>() {});
    }

    /** Scores many items in one call; the server runs them in parallel. */
    public Rewards.BatchResult rewardBatch(List<Rewards.Request> items) {
        return call("POST", "/v1/reward/batch", Map.of("items", items), new TypeReference<>() {});
    }

    // -- LLM tools ----------------------------------------------------------------------------------------------

    /**
     * The tool definitions as the server renders them, with its available languages.
     * @param format "openai", "openai-functions", "anthropic" or "mcp"; {@code set} "stateless", "session" or "all"
     */
    public JsonNode tools(String format, String set) {
        return call("GET", "/v1/tools?format=" + URLEncoder.encode(format, StandardCharsets.UTF_8) + "&set="
                + URLEncoder.encode(set, StandardCharsets.UTF_8), null, new TypeReference<>() {});
    }

    /**
     * Runs one tool call as a model made it. Mistakes of the model (unknown tool, bad arguments, unknown session) come
     * back as an outcome with {@link ToolOutcome#isError()}, not as an exception.
     *
     * @param arguments the call's arguments: a JSON object, or the string the model wrote
     * @param sessionId the session that session tools use when the model names none, or null
     */
    public ToolOutcome callTool(String name, JsonNode arguments, String sessionId) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("name", name);
        body.put("arguments", arguments);
        body.put("session_id", sessionId);
        return call("POST", "/v1/tools/call", body, new TypeReference<>() {});
    }

    /** {@code GET /healthz}: status, running and queued runs, pool size, memory, uptime. */
    public JsonNode health() {
        return call("GET", "/healthz", null, new TypeReference<>() {});
    }

    private <T> T call(String method, String path, Object body, TypeReference<T> type) {
        return http.call(method, path, body, type);
    }
}
