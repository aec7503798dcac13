package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestDirs;
import dev.crucible.TestHost;
import dev.crucible.server.e2b.E2bApi;
import dev.crucible.session.spec.SessionConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Spares for E2B's templates (issue 50 item 3): a server keeps sessions made ahead of the kinds the operator names
 * ({@code serve --session-spares python=1,node=1}, each kind what a {@code templateID} names), and an E2B create of
 * such a template takes one, its envVars set only after it is taken; the real server and sandboxes.
 */
class E2bSparesTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String KEY = "e2b_" + "0123456789abcdef".repeat(2) + "01234567";
    private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @Test
    void theSparesSettingNamesKindsAsTemplatesDo() {
        assertThat(E2bApi.spares("2", Map.of())).containsExactly(SessionConfig.Spare.PYTHON, SessionConfig.Spare.PYTHON);
        assertThat(E2bApi.spares("0", Map.of())).isEmpty();
        assertThat(E2bApi.spares("code-interpreter-v1, node@gvisor=2,data", Map.of("data", "registry.example.com/ds:1")))
                .containsExactly(SessionConfig.Spare.PYTHON, new SessionConfig.Spare("javascript", null, "gvisor"),
                        new SessionConfig.Spare("javascript", null, "gvisor"),
                        new SessionConfig.Spare("python", "registry.example.com/ds:1", null));
        for (String bad : List.of("17", "python=x", "=1", "python=9,node=8")) {
            assertThatThrownBy(() -> E2bApi.spares(bad, Map.of())).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void anE2bCreateOfAKeptTemplateTakesItsSpareAndANewOneIsMadeBehind() throws Exception {
        Path data = TestDirs.create("crucible-e2b-spares-");
        ServerConfig config = Http.config().withDataDir(data);
        config = config.withPort(0).withTokens(Set.of(KEY)).withPool(Map.of()).withSessions(config.sessions()
                .withSpares(E2bApi.spares("base=1,node=1", Map.of())));
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            String base = "http://127.0.0.1:" + server.port();
            Map<String, String> spares = awaitSpares(server, data, 2);
            assertThat(spares.values()).containsExactlyInAnyOrder("python", "javascript");

            JsonNode node = create(base, Map.of("templateID", "node"));
            assertThat(spares.get(node.get("sandboxID").asString())).as("the JavaScript spare").isEqualTo("javascript");
            assertThat(execute(base, node, "[1, 2].map((x) => x * 21)[1]")).contains("\"text\":\"42\"");

            JsonNode py = create(base, Map.of("templateID", "code-interpreter-v1", "envVars", Map.of("GREETING", "hi")));
            assertThat(spares.get(py.get("sandboxID").asString())).as("the Python spare").isEqualTo("python");
            assertThat(execute(base, py, "import os; os.environ['GREETING']")).contains("\"text\":\"'hi'\"");
            String id = py.get("sandboxID").asString();
            Http http = Http.to(server, KEY);
            assertThat(SessionApiTest.json(http.get("/v1/sessions/" + id + "/processes")).path("processes"))
                    .as("the spare's warm-up command is never listed").isEmpty();
            JsonNode ran = SessionApiTest.json(http.postJson("/v1/sessions/" + id + "/commands",
                    "{\"command\": \"ls -A /home/user /workspace; echo $$\"}"));
            assertThat(ran.path("exit_code").asInt()).as(ran.toString()).isZero();
            assertThat(ran.path("stdout").asString()).as("nothing left in the home or the workspace")
                    .matches("/home/user:\n\n/workspace:\n\\d+\n");
            assertThat(stat(base, py, ".").path("entry").path("path").asString())
                    .as("the home of a spare with a root of its own, known without asking its sandbox")
                    .isEqualTo("/home/user");

            Map<String, String> next = awaitSpares(server, data, 2);
            assertThat(next.values()).containsExactlyInAnyOrder("python", "javascript");
            assertThat(next.keySet()).as("made anew, not the ones taken").doesNotContain(node.get("sandboxID")
                    .asString(), py.get("sandboxID").asString());
            for (JsonNode s : List.of(node, py)) {
                assertThat(send(HttpRequest.newBuilder(URI.create(base + "/sandboxes/" + s.get("sandboxID").asString()))
                        .header("X-API-KEY", KEY).DELETE()).statusCode()).isEqualTo(204);
            }
        }
        assertThat(SessionSparesTest.sessionDirs(data)).as("the spares removed with the server").isEmpty();
    }

    /** Waits until {@code n} spares are ready; each one's session id and language. */
    private static Map<String, String> awaitSpares(CrucibleServer server, Path data, int n) {
        Http http = Http.to(server, KEY);
        await("spares made").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() ->
                SessionOvercommitTest.gauge(http.get("/metrics").body(), "crucible_sessions_spares") == n);
        Map<String, String> languages = new HashMap<>();
        for (String id : SessionSparesTest.sessionDirs(data)) {
            JsonNode record = JSON.readTree(data.resolve("sessions").resolve(id).resolve("session.json").toFile());
            if (record.path("owner").asString().startsWith("spare:")) {
                languages.put(id, record.path("language").asString());
            }
        }
        assertThat(languages).hasSize(n);
        return languages;
    }

    static JsonNode create(String base, Map<String, Object> body) throws Exception {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + "/v2/sandboxes")).header("X-API-KEY", KEY)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(
                        JSON.writeValueAsBytes(body))));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body());
    }

    /** {@code POST /execute} of the code interpreter: its NDJSON lines. */
    static String execute(String base, JsonNode sandbox, String code) throws Exception {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + "/execute"))
                .header("E2b-Sandbox-Id", sandbox.get("sandboxID").asString()).header("E2b-Sandbox-Port", "49999")
                .header("X-Access-Token", sandbox.get("envdAccessToken").asString())
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(
                        JSON.writeValueAsBytes(Map.of("code", code)))));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return r.body();
    }

    /** envd's {@code filesystem.Filesystem/Stat} of {@code path} (relative: the user's home's). */
    static JsonNode stat(String base, JsonNode sandbox, String path) throws Exception {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + "/filesystem.Filesystem/Stat"))
                .header("E2b-Sandbox-Id", sandbox.get("sandboxID").asString()).header("E2b-Sandbox-Port", "49983")
                .header("X-Access-Token", sandbox.get("envdAccessToken").asString())
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(
                        JSON.writeValueAsBytes(Map.of("path", path)))));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    static HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
        return CLIENT.send(b.timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
