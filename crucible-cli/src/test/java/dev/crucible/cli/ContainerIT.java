package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.HostileCasesTest;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The container image under Podman with exactly the security settings of docs/container.md: every case of the hostile catalogue
 * through {@code POST /v1/execute} gets the outcome the host's sandbox gets, and every route of the server answers a
 * minimal valid request. Runs when {@code CRUCIBLE_CONTAINER_IT=1} (./run-tests sets it when the tools are installed):
 * a cold image build takes a few minutes.
 */
class ContainerIT {
    static final JsonMapper JSON = JsonMapper.builder().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
    static PodmanContainer container;

    @BeforeAll
    static void start() throws Exception {
        container = PodmanContainer.start(CliIT.JAR);
    }

    @AfterAll
    static void stop() throws Exception {
        if (container != null) {
            container.close();
        }
    }

    static Stream<Arguments> cases() throws IOException {
        return HostileCasesTest.cases();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileCaseGetsItsExpectedOutcomeInTheContainer(String id, JsonNode c, JsonNode expect) throws Exception {
        try (InContainerListener listener = InContainerListener.open(container, expect.path("listener").asString(""))) {
            ObjectNode body = JSON.createObjectNode().put("language", c.get("language").asString())
                    .put("code", c.get("code").asString().replace("{HOST_PORT}", Integer.toString(listener.port())));
            if (expect.has("limits")) {
                body.set("limits", expect.get("limits"));
            }
            ExecuteResult result = execute(body.toString());
            if (expect.path("run_twice").asBoolean(false)) {
                assertThat(result.status().wireName()).isEqualTo("ok");
                result = execute(body.toString());
            }
            String describe = id + " (in the container) -> " + result.status() + " exit=" + result.exitCode()
                    + " signal=" + result.signal() + "\nstdout: " + HostileCasesTest.abbreviate(result.stdout())
                    + "\nstderr: " + HostileCasesTest.abbreviate(result.stderr()) + "\nmessage: " + result.message();
            HostileCasesTest.check(expect, result, describe);
            assertThat(listener.connections()).as("connections to the container's listener\n" + describe).isZero();
        }
        assertThat(execute("{\"language\": \"python\", \"code\": \"print('alive')\"}").stdout())
                .as("the next request is served").isEqualTo("alive\n");
    }

    static ExecuteResult execute(String body) throws Exception {
        HttpResponse<String> r = container.send("POST", "/v1/execute", body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readValue(r.body(), ExecuteResult.class);
    }

    /**
     * Every operation of the container's own openapi.json is called once with a minimal valid request and answers as
     * documented; MCP's initialize too (a servlet, outside the table). A route added without a line here fails.
     */
    @Test
    void everyRouteAnswersAMinimalValidRequest() throws Exception {
        Set<String> called = new TreeSet<>();
        JsonNode openapi = JSON.readTree(expect(called, "GET", "/openapi.json", null, 200).body());
        assertThat(expect(called, "GET", "/healthz", null, 200).body()).contains("\"status\":\"ok\"");
        // the probes the Kubernetes manifests use, with the settings docs/container.md gives for a container
        assertThat(expect(called, "GET", "/readyz", null, 200).body()).contains("\"status\":\"ready\"")
                .contains("\"part\":\"slots\"").contains("\"part\":\"admission\"");
        assertThat(expect(called, "GET", "/livez", null, 200).body()).contains("\"status\":\"live\"");
        assertThat(expect(called, "GET", "/ui/", null, 200).body()).contains("<title>Crucible</title>");
        assertThat(expect(called, "GET", "/ui/console.js", null, 200).body()).contains("EditorView");
        expect(called, "GET", "/", null, 404); // not a browser: the API's 404
        assertThat(expect(called, "GET", "/metrics", null, 200).body()).contains("crucible_");
        JsonNode runtimes = JSON.readTree(expect(called, "GET", "/v1/runtimes", null, 200).body());
        assertThat(runtimes.findValuesAsString("language")).containsExactlyInAnyOrder("python", "javascript", "bash", "c",
                "cpp", "java");
        runtimes.forEach(r -> assertThat(r.get("available").asBoolean()).as(r.toString()).isTrue());
        assertThat(expect(called, "POST", "/v1/execute", "{\"language\": \"java\", \"code\": "
                + "\"class Main { public static void main(String[] a) { System.out.println(6 * 7); } }\"}", 200).body())
                .contains("\"stdout\":\"42\\n\"");

        String id = JSON.readTree(expect(called, "POST", "/v1/sessions", "{}", 201).body()).get("id").asString();
        String s = "/v1/sessions/" + id;
        assertThat(expect(called, "GET", "/v1/sessions", null, 200).body()).contains(id);
        expect(called, "GET", s, null, 200);
        assertThat(expect(called, "POST", s + "/execute", "{\"code\": \"x = 6 * 7\\nx\"}", 200).body())
                .contains("\"result\":\"42\"");
        // a command beside the interpreter: the supervisor works in the container's sandboxes too
        assertThat(expect(called, "POST", s + "/commands", "{\"command\": \"echo $((6 * 7)) > f.txt; cat f.txt\"}", 200)
                .body()).contains("\"stdout\":\"42\\n\"").contains("\"exit_code\":0");
        // a background process on a terminal: its output, stdin, size and signals
        long pid = JSON.readTree(expect(called, "POST", s + "/commands", "{\"command\": \"read x; echo got-$x\","
                + " \"background\": true, \"stdin_open\": true, \"pty\": {\"rows\": 24, \"cols\": 80}}", 201).body())
                .get("pid").asLong();
        String process = s + "/processes/" + pid;
        assertThat(expect(called, "GET", s + "/processes", null, 200).body()).contains("\"pid\":" + pid);
        expect(called, "GET", process, null, 200);
        expect(called, "POST", process + "/resize", "{\"rows\": 30, \"cols\": 100}", 200);
        expect(called, "POST", process + "/stdin", "{\"data\": \"in\\r\"}", 200);
        assertThat(expect(called, "GET", process + "/output?wait_ms=10000&from=" + Long.MAX_VALUE, null, 200).body())
                .contains("\"pid\":" + pid);
        assertThat(expect(called, "GET", process + "/output", null, 200).body()).contains("got-in");
        expect(called, "POST", process + "/signal", "{\"signal\": \"KILL\"}", 200);
        expect(called, "GET", s + "/terminal", null, 400); // a WebSocket route: TerminalTest covers the upgrade
        // ports: a container that refuses unshare(CLONE_NEWNET) (these settings) gives sessions no namespace of their
        // own, so a port answers 503 ports_unavailable, saying why; PortsTest covers ports where they work
        assertThat(expect(called, "GET", s + "/ports", null, 200).body()).contains("\"ports\":[]");
        String link = JSON.readTree(expect(called, "POST", s + "/previews", "{\"port\": 8000}", 201).body())
                .get("url").asString();
        String preview = link.substring(link.indexOf("/v1/previews/"), link.length() - 1);
        for (String method : List.of("GET", "POST", "PUT", "DELETE")) {
            String body = method.equals("POST") || method.equals("PUT") ? "{}" : null;
            assertThat(expect(called, method, s + "/ports/8000/x", body, 503).body()).contains("ports_unavailable");
            expect(called, method, s + "/ports/8000", body, 302); // the root of a port: to its slash
            assertThat(expect(called, method, preview + "/x", body, 503).body()).contains("ports_unavailable");
            expect(called, method, preview, body, 302);
        }
        expect(called, "POST", s + "/interrupt", null, 200);
        expect(called, "POST", s + "/restart", null, 200);
        assertThat(expect(called, "POST", s + "/pause", null, 200).body()).contains("\"state\":\"paused\"");
        assertThat(expect(called, "POST", s + "/resume", null, 200).body()).contains("\"state\":\"running\"");
        String fork = JSON.readTree(expect(called, "POST", s + "/fork", "{\"count\": 1}", 200).body()).get("forks")
                .get(0).get("id").asString();
        expect(called, "DELETE", "/v1/sessions/" + fork, null, 200);
        assertThat(expect(called, "POST", s + "/snapshots", "{\"name\": \"it-snap\"}", 201).body())
                .contains("\"name\":\"it-snap\"");
        assertThat(expect(called, "GET", "/v1/snapshots", null, 200).body()).contains("it-snap");
        String fromSnapshot = JSON.readTree(expect(called, "POST", "/v1/sessions", "{\"snapshot\": \"it-snap\"}", 201)
                .body()).get("id").asString();
        container.send("DELETE", "/v1/sessions/" + fromSnapshot, null);
        expect(called, "DELETE", "/v1/snapshots/it-snap", null, 200);
        assertThat(expect(called, "POST", s + "/commit", "{\"tag\": \"it/never:1\"}", 422).body())
                .contains("commit_unavailable"); // a session on the host's file system
        expect(called, "POST", s + "/network", "{\"allow\": []}", 200);
        expect(called, "PUT", s + "/files/up/a.bin", new byte[] {0, 1, 2, (byte) 255}, 201);
        assertThat(expect(called, "GET", s + "/files", null, 200).body()).contains("\"path\":\"up\"");
        assertThat(expect(called, "GET", s + "/files/up/a.bin", null, 200).body().getBytes(StandardCharsets.ISO_8859_1))
                .hasSize(4);
        expect(called, "DELETE", s + "/files/up/a.bin", null, 200);
        // an absolute path in the workspace; outside it a container's server (no CAP_SYS_PTRACE) cannot open the
        // sandbox's root, and says so
        expect(called, "PUT", s + "/files?path=%2Fworkspace%2Fany.txt", "anywhere".getBytes(StandardCharsets.UTF_8), 201);
        assertThat(expect(called, "GET", s + "/files?path=%2Fworkspace%2Fany.txt", null, 200).body()).isEqualTo("anywhere");
        expect(called, "DELETE", s + "/files?path=%2Fworkspace%2Fany.txt", null, 200);
        assertThat(expect(called, "GET", s + "/files?path=%2Fetc%2Fhostname", null, 503).body())
                .contains("cannot be reached");
        // a desktop needs a root of its own, which a session in this container has not: refused saying so
        assertThat(expect(called, "POST", s + "/desktop", "{}", 422).body()).contains("root of its own");
        expect(called, "POST", s + "/desktop/screenshot", "{}", 404);
        expect(called, "POST", s + "/desktop/actions", "{\"actions\": [{\"action\": \"mouse_move\","
                + " \"coordinate\": [1, 1]}]}", 404);
        expect(called, "DELETE", s, null, 200);

        assertThat(expect(called, "POST", "/v1/evaluate", "{\"language\": \"python\", \"code\": \"print(int(input()) * 2)\","
                + " \"testcases\": [{\"stdin\": \"21\", \"expect\": \"42\"}]}", 200).body()).contains("\"passed\":1");
        // a dataset evaluation run by the server in the container: started, followed to its end, read, deleted
        String evaluation = JSON.readTree(expect(called, "POST", "/v1/evaluations", "{\"format\": \"humaneval\","
                + " \"problems\": " + JSON.writeValueAsString("{\"task_id\": \"t/0\", \"prompt\": \"def f():\\n\","
                + " \"entry_point\": \"f\", \"test\": \"def check(c):\\n    assert c() == 1\\n\","
                + " \"canonical_solution\": \"    return 1\\n\"}") + "}", 202).body()).get("id").asString();
        for (int turn = 0; turn < 600 && expect(called, "GET", "/v1/evaluations/" + evaluation, null, 200).body()
                .contains("\"state\":\"running\""); turn++) {
            Thread.sleep(100); // the run judges in the background
        }
        assertThat(expect(called, "GET", "/v1/evaluations/" + evaluation, null, 200).body()).contains("\"state\":\"done\"")
                .contains("\"passed\":1");
        assertThat(expect(called, "GET", "/v1/evaluations", null, 200).body()).contains(evaluation);
        assertThat(expect(called, "GET", "/v1/evaluations/" + evaluation + "/results", null, 200).body())
                .contains("\"passed\":true").contains("\"summary\"");
        expect(called, "DELETE", "/v1/evaluations/" + evaluation, null, 200);
        String item = "{\"messages\": [{\"role\": \"user\", \"content\": \"Print 6*7. Expected output: 42\"},"
                + " {\"role\": \"assistant\", \"content\": \"```python\\nprint(6 * 7)\\n```\"}]}";
        assertThat(expect(called, "POST", "/v1/reward", item, 200).body()).contains("\"score\":1.0");
        expect(called, "POST", "/v1/reward/batch", "{\"items\": [" + item + "]}", 200);
        assertThat(expect(called, "GET", "/api/v2/runtimes", null, 200).body()).contains("python");
        assertThat(expect(called, "POST", "/api/v2/execute", "{\"language\": \"python\", \"version\": \"*\","
                + " \"files\": [{\"content\": \"print(1)\"}]}", 200).body()).contains("\"stdout\":\"1\\n\"");
        assertThat(expect(called, "POST", "/run_code", "{\"code\": \"print(1)\", \"language\": \"python\"}", 200).body())
                .contains("\"status\":\"Success\"");
        assertThat(expect(called, "POST", "/replit/eval", "{\"code\": \"print('hi')\"}", 200).body()).isEqualTo("hi\n");
        assertThat(expect(called, "GET", "/v1/tools", null, 200).body()).contains("run_code");
        assertThat(expect(called, "POST", "/v1/tools/call",
                "{\"name\": \"run_code\", \"arguments\": \"{\\\"code\\\": \\\"print(5)\\\"}\"}", 200).body())
                .contains("\"text\":\"5\\n\"");
        HttpResponse<String> mcp = container.send("POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                + "\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}",
                "Accept", "application/json, text/event-stream");
        assertThat(mcp.statusCode()).as(mcp.body()).isEqualTo(200);
        assertThat(mcp.body()).contains("\"serverInfo\"");

        Set<String> documented = new TreeSet<>();
        openapi.get("paths").properties().forEach(p -> p.getValue().propertyNames().forEach(m -> {
            if (Set.of("get", "post", "put", "delete").contains(m)) {
                documented.add(m.toUpperCase() + " " + p.getKey());
            }
        }));
        assertThat(called).isEqualTo(documented);
    }

    /** Sends a request, checks its status, and notes the operation it called (path parameters put back). */
    private static HttpResponse<String> expect(Set<String> called, String method, String path, Object body, int status)
            throws Exception {
        HttpResponse<String> r = container.send(method, path, body);
        assertThat(r.statusCode()).as(method + " " + path + " -> " + r.body()).isEqualTo(status);
        called.add(method + " " + path.replaceFirst("\\?.*$", "")
                .replaceFirst("^/v1/sessions/[0-9a-f]{32}", "/v1/sessions/{id}")
                .replaceFirst("/files/.+$", "/files/{path}").replaceFirst("/processes/[0-9]+", "/processes/{pid}")
                .replaceFirst("/ports/[0-9]+/.+$", "/ports/{port}/{path}").replaceFirst("/ports/[0-9]+$", "/ports/{port}")
                .replaceFirst("^/v1/previews/[^/]+/.+$", "/v1/previews/{token}/{path}")
                .replaceFirst("^/v1/previews/[^/]+$", "/v1/previews/{token}")
                .replaceFirst("^/v1/snapshots/.+$", "/v1/snapshots/{name}")
                .replaceFirst("^/v1/evaluations/[0-9a-f]{32}", "/v1/evaluations/{id}")
                .replaceFirst("^/ui/.+$", "/ui/{asset}"));
        return r;
    }

    /** The docs' "Running in a container" states exactly the settings this test runs with. */
    @Test
    void theDocsStateTheseSettings() throws IOException {
        String page = Files.readString(PodmanContainer.ROOT.resolve("docs/container.md"));
        List<String> flags = new ArrayList<>(PodmanContainer.security(false));
        flags.addAll(PodmanContainer.security(true));
        for (int i = 0; i + 1 < flags.size(); i += 2) {
            assertThat(page).as("docs/container.md, Running in a container").contains(flags.get(i) + " " + flags.get(i + 1));
        }
    }
}
