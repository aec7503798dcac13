package dev.crucible.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
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

    private final HttpClient http;
    private final URI base;
    private final String token;
    private final Duration timeout;

    private CrucibleClient(URI base, String token, Duration timeout) {
        String s = base.toString();
        this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
        this.token = token == null || token.isBlank() ? null : token.strip();
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
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
        return base;
    }

    // -- stateless execution ------------------------------------------------------------------------------------

    public ExecuteResult execute(ExecuteRequest request) {
        return call("POST", "/v1/execute", request, new TypeReference<>() {});
    }

    public List<RuntimeInfo> runtimes() {
        return call("GET", "/v1/runtimes", null, new TypeReference<>() {});
    }

    // -- sessions -----------------------------------------------------------------------------------------------

    /** A new session in {@code language} ("python" when null), with the server's default limits. */
    public SessionInfo createSession(String language) {
        return createSession(language == null ? Map.of() : Map.of("language", language));
    }

    /** A new session with every option of {@code POST /v1/sessions} (language, limits, restore, snapshot…). */
    public SessionInfo createSession(Map<String, Object> options) {
        return call("POST", "/v1/sessions", options, new TypeReference<>() {});
    }

    public SessionInfo session(String id) {
        return call("GET", "/v1/sessions/" + segment(id), null, new TypeReference<>() {});
    }

    public List<SessionInfo> sessions() {
        record Page(List<SessionInfo> sessions) {}
        return call("GET", "/v1/sessions", null, new TypeReference<Page>() {}).sessions();
    }

    /** Runs a cell in {@code auto} mode: its statements, then the value of its last expression. */
    public CellResult executeCell(String sessionId, String code) {
        return executeCell(sessionId, code, null, null);
    }

    /** A cell in {@code mode} "auto", "exec" or "single" (null: auto), with its own timeout or (null) the session's. */
    public CellResult executeCell(String sessionId, String code, String mode, Long timeoutMs) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("code", code);
        body.put("mode", mode);
        body.put("timeout_ms", timeoutMs);
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/execute", body, new TypeReference<>() {});
    }

    /** Runs a shell line ({@code /bin/sh -c}) in the session's sandbox, beside its interpreter, to its end. */
    public CommandResult runCommand(String sessionId, String shellLine) {
        return runCommand(sessionId, Map.of("command", shellLine));
    }

    /** Runs a command with every API option: {@code command} or {@code argv}, env, cwd, timeout_ms, stdin. */
    public CommandResult runCommand(String sessionId, Map<String, Object> request) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/commands", request, new TypeReference<>() {});
    }

    /** Starts a command in the background: every option of {@link #runCommand(String, Map)}, and stdin_open. */
    public ProcessInfo startProcess(String sessionId, Map<String, Object> request) {
        Map<String, Object> body = new LinkedHashMap<>(request);
        body.put("background", true);
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/commands", body, new TypeReference<>() {});
    }

    /** The TCP ports something listens on in the session's sandbox now, each {@code {port, path}}. */
    public List<Map<String, Object>> ports(String sessionId) {
        record Page(List<Map<String, Object>> ports) {}
        return call("GET", "/v1/sessions/" + segment(sessionId) + "/ports", null, new TypeReference<Page>() {})
                .ports();
    }

    /** A tokenless link to {@code port} for {@code ttlS} s (a day at most, within the session's life): {url, port…}. */
    public Map<String, Object> preview(String sessionId, int port, long ttlS) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/previews", Map.of("port", port, "ttl_s", ttlS),
                new TypeReference<>() {});
    }

    /** The session's background processes, running and ended, oldest first. */
    public List<ProcessInfo> processes(String sessionId) {
        record Page(List<ProcessInfo> processes) {}
        return call("GET", "/v1/sessions/" + segment(sessionId) + "/processes", null, new TypeReference<Page>() {})
                .processes();
    }

    /** A process's output from {@code from} (0: oldest kept; then the last {@code next}), waiting up to waitMs. */
    public ProcessInfo.Output processOutput(String sessionId, long pid, long from, long waitMs) {
        return call("GET", "/v1/sessions/" + segment(sessionId) + "/processes/" + pid + "/output?from=" + from
                + "&wait_ms=" + waitMs, null, new TypeReference<>() {});
    }

    /** Writes {@code data} to a background process's stdin (started with {@code stdin_open}); closes it when asked. */
    public long writeStdin(String sessionId, long pid, String data, boolean close) {
        JsonNode answer = call("POST", "/v1/sessions/" + segment(sessionId) + "/processes/" + pid + "/stdin",
                Map.of("data", data == null ? "" : data, "close", close), new TypeReference<>() {});
        return answer.path("written").asLong();
    }

    /** Sizes the terminal of a background process started with {@code pty}; false if it had ended. */
    public boolean resizeProcess(String sessionId, long pid, int rows, int cols) {
        JsonNode answer = call("POST", "/v1/sessions/" + segment(sessionId) + "/processes/" + pid + "/resize",
                Map.of("rows", rows, "cols", cols), new TypeReference<>() {});
        return answer.path("resized").asBoolean(false);
    }

    /** Sends {@code signal} ({@code "TERM"}, {@code "KILL"}, …) to a background process's group; false if it had ended. */
    public boolean signalProcess(String sessionId, long pid, String signal) {
        JsonNode answer = call("POST", "/v1/sessions/" + segment(sessionId) + "/processes/" + pid + "/signal",
                Map.of("signal", signal), new TypeReference<>() {});
        return answer.path("signalled").asBoolean(false);
    }

    /** Asks the running cell to stop (KeyboardInterrupt); true when one was running. */
    public boolean interrupt(String sessionId) {
        JsonNode answer = call("POST", "/v1/sessions/" + segment(sessionId) + "/interrupt", null,
                new TypeReference<>() {});
        return answer.path("interrupted").asBoolean(false);
    }

    public SessionInfo restart(String sessionId) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/restart", null, new TypeReference<>() {});
    }

    /** Pauses a session: its memory released (behind gVisor saved whole first), its files kept; see {@link #resume}. */
    public SessionInfo.Pause pause(String sessionId) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/pause", null, new TypeReference<>() {});
    }

    /** Forks a session into {@code count} new ones (their copies of its files, and of its memory behind gVisor). */
    public JsonNode fork(String sessionId, int count) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/fork", Map.of("count", count),
                new TypeReference<>() {});
    }

    /** Takes a named snapshot of a session; {@code createSession(Map.of("snapshot", name))} makes one from it. */
    public SessionInfo.Snapshot snapshot(String sessionId, String name) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/snapshots", Map.of("name", name),
                new TypeReference<>() {});
    }

    /** This token's snapshots, oldest first. */
    public List<SessionInfo.Snapshot> snapshots() {
        record Page(List<SessionInfo.Snapshot> snapshots) {}
        return call("GET", "/v1/snapshots", null, new TypeReference<Page>() {}).snapshots();
    }

    /** Commits a session in an image: its workspace as a new image {@code tag} ({image, digest, base, …}). */
    public JsonNode commit(String sessionId, String tag) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/commit", Map.of("tag", tag), new TypeReference<>() {});
    }

    public void deleteSnapshot(String name) {
        call("DELETE", "/v1/snapshots/" + segment(name), null, new TypeReference<JsonNode>() {});
    }

    /** Resumes a paused session now (its next call would too); {@code restored} says what came back. */
    public SessionInfo.Pause resume(String sessionId) {
        return call("POST", "/v1/sessions/" + segment(sessionId) + "/resume", null, new TypeReference<>() {});
    }

    public void deleteSession(String sessionId) {
        call("DELETE", "/v1/sessions/" + segment(sessionId), null, new TypeReference<JsonNode>() {});
    }

    // -- files of a session -------------------------------------------------------------------------------------

    /** A session's file: relative under its {@code /workspace}, or absolute (any path of its file system, as its user). */
    private String file(String sessionId, String path) {
        return "/v1/sessions/" + segment(sessionId) + (path.startsWith("/")
                ? "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8) : "/files/" + path(path));
    }

    /** Writes {@code data} at {@code path} (relative to the session's {@code /workspace}, or absolute). */
    public void upload(String sessionId, String path, byte[] data) {
        send(request(file(sessionId, path))
                .header("Content-Type", "application/octet-stream")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(data)));
    }

    public byte[] download(String sessionId, String path) {
        return send(request(file(sessionId, path)).GET());
    }

    /** The entries under {@code dir} of the workspace ("" or null: its root), or of an absolute directory. */
    public List<FileEntry> listFiles(String sessionId, String dir) {
        record Page(List<FileEntry> files) {}
        String query = dir == null || dir.isEmpty() ? "" : "?dir=" + URLEncoder.encode(dir, StandardCharsets.UTF_8);
        return call("GET", "/v1/sessions/" + segment(sessionId) + "/files" + query, null,
                new TypeReference<Page>() {}).files();
    }

    public void deleteFile(String sessionId, String path) {
        call("DELETE", file(sessionId, path), null, new TypeReference<JsonNode>() {});
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

    // -- plumbing -----------------------------------------------------------------------------------------------

    private <T> T call(String method, String path, Object body, TypeReference<T> type) {
        HttpRequest.Builder builder = request(path);
        if (body == null) { // the server takes a POST only with JSON or this header (no browser sends it cross-site)
            builder.header("X-Crucible-Request", "1").method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            builder.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)));
        }
        byte[] answer = send(builder);
        try {
            return JSON.readValue(answer, type);
        } catch (JacksonException e) {
            throw new CrucibleException(0, "invalid_response", "the server's answer to " + method + " " + path
                    + " is not the expected JSON: " + e.getOriginalMessage(), e);
        }
    }

    private HttpRequest.Builder request(String path) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout)
                .header("Accept", "application/json");
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        return builder;
    }

    /** Sends the request, asking again while a refusal says when to ({@link Exchange}). */
    private byte[] send(HttpRequest.Builder builder) {
        return Exchange.send(http, builder.build(), base, timeout);
    }

    private static String segment(String id) {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("a session id is required");
        }
        return URLEncoder.encode(id, StandardCharsets.UTF_8);
    }

    /** Each segment of a workspace path encoded on its own; the server judges what the path may be. */
    private static String path(String path) {
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("a file path is required");
        }
        StringBuilder out = new StringBuilder();
        for (String part : path.split("/", -1)) {
            if (!out.isEmpty()) {
                out.append('/');
            }
            out.append(URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20"));
        }
        return out.toString();
    }
}
