package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Every route against the real server on port 0 with the real sandbox behind it. */
class ServerTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of("python", 1)));

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    @Test
    void executeRunsAProgramAndAnswersTheResult() throws Exception {
        HttpResponse<String> r = SERVER.http().postJson("/v1/execute", """
                {"language": "python", "code": "import sys\\nprint(input().upper(), sys.argv[1:])", "stdin": "hi\\n",
                 "args": ["x"], "limits": {"timeout_ms": 5000}}""");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("application/json");
        JsonNode body = json(r);
        assertThat(body.get("status").asString()).isEqualTo("ok");
        assertThat(body.get("stdout").asString()).isEqualTo("HI ['x']\n");
        assertThat(body.get("exit_code").asInt()).isZero();
        for (String field : List.of("stderr", "stdout_truncated", "stderr_truncated", "wall_ms", "cpu_ms", "memory_bytes")) {
            assertThat(body.has(field)).as(field).isTrue();
        }
        JsonNode c = json(SERVER.http().postJson("/v1/execute", "{\"language\":\"c\",\"code\":\"int main(){return 2;}\"}"));
        assertThat(c.get("status").asString()).isEqualTo("runtime_error");
        assertThat(c.get("compile").get("status").asString()).isEqualTo("ok");
    }

    @Test
    void runtimesHealthAndMetricsAnswer() throws Exception {
        JsonNode runtimes = json(SERVER.http().get("/v1/runtimes"));
        assertThat(runtimes.size()).isEqualTo(6);
        assertThat(runtimes.get(0).get("language").asString()).isEqualTo("python");
        assertThat(runtimes.get(0).get("available").asBoolean()).isTrue();
        assertThat(json(SERVER.http().get("/healthz")).get("status").asString()).isEqualTo("ok");
        SERVER.http().postJson("/v1/execute", "{\"language\":\"python\",\"code\":\"print(1)\"}");
        String metrics = SERVER.http().get("/metrics").body();
        assertThat(metrics).contains("crucible_http_requests_total{method=\"POST\",route=\"/v1/execute\",status=\"200\"}")
                .contains("crucible_http_request_duration_seconds_bucket").contains("crucible_verdicts_total{status=\"ok\"}")
                .contains("crucible_pool_ready").contains("crucible_pool_hits_total").contains("crucible_pool_misses_total")
                .contains("crucible_pool_launches_total").contains("crucible_queue_depth").contains("crucible_running");
    }

    @Test
    void openApiDocumentListsExactlyTheRoutesServed() throws Exception {
        JsonNode doc = json(SERVER.http().get("/openapi.json"));
        assertThat(doc.get("openapi").asString()).startsWith("3.1");
        Set<String> documented = new TreeSet<>();
        doc.get("paths").properties().forEach(path -> path.getValue().properties().stream()
                .filter(op -> !op.getKey().equals("parameters"))
                .forEach(op -> documented.add(op.getKey().toUpperCase() + " " + path.getKey())));
        assertThat(documented).isEqualTo(new TreeSet<>(SERVER.server().routes()));
        for (String route : SERVER.server().routes()) {
            String[] parts = route.split(" ");
            String path = parts[1].replace("{id}", "0".repeat(32)).replace("{path}", "x.txt").replace("{pid}", "1")
                    .replace("{port}", "8000").replace("{token}", "x").replace("{name}", "x").replace("{asset}", "console.js");
            HttpResponse<String> r = switch (parts[0]) {
                case "GET" -> SERVER.http().get(path);
                case "PUT" -> SERVER.http().put(path, new byte[1]);
                case "DELETE" -> SERVER.http().delete(path);
                case "POST" -> SERVER.http().postJson(path, "{}");
                default -> SERVER.http().send(HttpRequest.newBuilder(
                        URI.create(SERVER.http().base() + path)).method(parts[0],
                        HttpRequest.BodyPublishers.noBody()));
            };
            assertThat(r.statusCode()).as(route + " is served").isNotEqualTo(405);
            if (r.statusCode() == 404 && !parts[0].equals("HEAD")) { // a session (snapshot) that does not exist
                assertThat(json(r).get("error").get("code").asString()).as(route)
                        .isEqualTo(route.contains("/v1/snapshots/") ? "snapshot_not_found"
                                : route.equals("GET /") || route.contains("/v1/evaluations/") ? "not_found"
                                : "session_not_found");
            }
        }
    }

    @Test
    void badRequestsGetJsonErrorsWithTheRightStatus() throws Exception {
        record Case(int status, String code, HttpResponse<String> response) {}
        List<Case> cases = new ArrayList<>();
        cases.add(new Case(400, "invalid_json", SERVER.http().postJson("/v1/execute", "{\"language\": \"python\", \"code\": ")));
        cases.add(new Case(400, "invalid_json", SERVER.http().postJson("/v1/execute", "")));
        cases.add(new Case(400, "invalid_json", SERVER.http().postJson("/v1/execute", "[1, 2]")));
        cases.add(new Case(400, "invalid_json", SERVER.http().postJson("/v1/execute", "{\"language\": 5, \"code\": {}}")));
        cases.add(new Case(400, "invalid_request", SERVER.http().postJson("/v1/execute", "{\"code\": \"print(1)\"}")));
        cases.add(new Case(400, "invalid_request", SERVER.http().postJson("/v1/execute", "{\"language\": \"python\"}")));
        cases.add(new Case(400, "unknown_language", SERVER.http().postJson("/v1/execute", "{\"language\":\"cobol\",\"code\":\"x\"}")));
        cases.add(new Case(422, "invalid_limits", SERVER.http().postJson("/v1/execute",
                "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"memory_mb\":999999}}")));
        cases.add(new Case(400, "invalid_file", SERVER.http().postJson("/v1/execute",
                "{\"language\":\"python\",\"code\":\"1\",\"files\":[{\"path\":\"../../etc/cron.d/evil\",\"content\":\"x\"}]}")));
        // Expect: 100-continue, as a careful client sends a large body: the 413 comes before the body is sent
        cases.add(new Case(413, "payload_too_large", SERVER.http().send(HttpRequest.newBuilder(URI.create(SERVER.http().base() + "/v1/execute"))
                .expectContinue(true).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
                        "{\"language\":\"python\",\"code\":\"" + "x".repeat(33 * 1024 * 1024) + "\"}")))));
        cases.add(new Case(415, "unsupported_media_type", SERVER.http().send(HttpRequest.newBuilder(URI.create(SERVER.http().base() + "/v1/execute"))
                .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString("{}")))));
        cases.add(new Case(404, "not_found", SERVER.http().get("/v2/nothing")));
        cases.add(new Case(405, "method_not_allowed", SERVER.http().send(HttpRequest.newBuilder(URI.create(SERVER.http().base() + "/v1/runtimes"))
                .DELETE())));
        for (Case c : cases) {
            assertThat(c.response().statusCode()).as(c.code() + ": " + c.response().body()).isEqualTo(c.status());
            JsonNode error = json(c.response()).get("error");
            assertThat(error.get("code").asString()).isEqualTo(c.code());
            assertThat(error.get("message").asString()).isNotBlank().doesNotContain("Exception").doesNotContain("\tat ");
        }
    }

    @Test
    void streamingSendsOutputAsItIsProducedThenTheResult() throws Exception {
        String body = "{\"language\":\"python\",\"code\":\"import sys, time\\nfor i in range(3):\\n    print(i, flush=True)\\n"
                + "    time.sleep(0.3)\\nsys.stderr.write('\\u00e9' * 3)\"}";
        HttpResponse<InputStream> r = SERVER.http().client().send(HttpRequest.newBuilder(URI.create(SERVER.http().base() + "/v1/execute"))
                .header("Content-Type", "application/json").header("Accept", "application/x-ndjson")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("application/x-ndjson");
        List<JsonNode> events = new ArrayList<>();
        List<Long> arrivals = new ArrayList<>();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = lines.readLine()) != null) {
                events.add(JSON.readTree(line));
                arrivals.add(System.nanoTime());
            }
        }
        assertThat(events.stream().map(e -> e.get("type").asString()).toList())
                .containsExactly("stdout", "stdout", "stdout", "stderr", "result");
        assertThat(events.get(1).get("data").asString()).isEqualTo("1\n");
        assertThat(events.get(3).get("data").asString()).isEqualTo("ééé");
        assertThat(events.get(4).get("result").get("stdout").asString()).isEqualTo("0\n1\n2\n");
        // the first line arrived well before the last: it was sent when printed, not at the end. A lower bound set by
        // the program's own sleeps (0.6 s between them), never an upper one: a loaded host only widens the gap
        assertThat(arrivals.get(3) - arrivals.get(0)).isGreaterThan(400_000_000L);

        HttpResponse<String> sse = SERVER.http().send(HttpRequest.newBuilder(URI.create(SERVER.http().base() + "/v1/execute"))
                .header("Content-Type", "application/json").header("Accept", "text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString("{\"language\":\"bash\",\"code\":\"echo one\"}")));
        assertThat(sse.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
        assertThat(sse.body()).startsWith("event: stdout\ndata: {\"type\":\"stdout\",\"data\":\"one\\n\"}\n\n")
                .contains("event: result\ndata: {\"type\":\"result\",\"result\":{\"status\":\"ok\"");
    }

    @Test
    void pooledRequestsShareNothing() throws Exception {
        String code = "{\"language\":\"python\",\"code\":\"import os\\nprint(os.path.exists('/tmp/x'), os.path.exists('y'))\\n"
                + "open('/tmp/x','w').write('1'); open('y','w').write('1')\"}";
        for (int i = 0; i < 3; i++) {
            assertThat(json(SERVER.http().postJson("/v1/execute", code)).get("stdout").asString()).isEqualTo("False False\n");
        }
    }

    @Test
    void refusesToListenBeyondLoopbackWithoutAToken() {
        assertThatThrownBy(() -> CrucibleServer.start(Http.config().withHost("0.0.0.0").withPort(0)
                .withTokens(Set.of()), TestHost.crucible()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("without a token");
    }

    @Test
    void tokensAreRequiredWhenConfigured() throws Exception {
        try (CrucibleServer secured = CrucibleServer.start(Http.config().withPort(0)
                .withTokens(Set.of("s3cret-one", "s3cret-two")).withPool(Map.of()), TestHost.crucible())) {
            Http none = Http.to(secured, null);
            Http wrong = Http.to(secured, "s3cret-on");
            Http right = Http.to(secured, "s3cret-two");
            String body = "{\"language\":\"python\",\"code\":\"print(1)\"}";
            assertThat(none.postJson("/v1/execute", body).statusCode()).isEqualTo(401);
            assertThat(json(wrong.postJson("/v1/execute", body)).get("error").get("code").asString()).isEqualTo("unauthorized");
            assertThat(none.get("/v1/runtimes").statusCode()).isEqualTo(401);
            assertThat(none.get("/metrics").statusCode()).isEqualTo(401);
            assertThat(none.get("/healthz").statusCode()).isEqualTo(200);
            assertThat(none.get("/openapi.json").statusCode()).isEqualTo(200);
            assertThat(right.postJson("/v1/execute", body).statusCode()).isEqualTo(200);
            assertThat(right.get("/v1/runtimes").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void beyondTheQueueIsA429WithRetryAfterAndShutdownIsGraceful() throws Exception {
        CrucibleServer small = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withConcurrency(1, 0).withShutdownGrace(Duration.ofSeconds(1)).withPool(Map.of()),
                TestHost.crucible());
        Http client = Http.to(small, null);
        List<HttpResponse<String>> slow = new ArrayList<>();
        Thread holder = Thread.ofVirtual().start(() -> {
            try {
                slow.add(client.postJson("/v1/execute", "{\"language\":\"python\",\"code\":\"import time\\ntime.sleep(30)\","
                        + "\"limits\":{\"timeout_ms\":60000}}"));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        await("the slow run running").atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(10))
                .until(() -> json(client.get("/healthz")).get("running").asInt() > 0);
        HttpResponse<String> refused = client.postJson("/v1/execute", "{\"language\":\"python\",\"code\":\"print(1)\"}");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(json(refused).get("error").get("code").asString()).isEqualTo("too_many_requests");
        JsonNode health = json(client.get("/healthz"));
        assertThat(health.get("max_running").asInt()).isEqualTo(1);
        assertThat(health.get("max_queued").asInt()).isZero();
        // shutdown: new work is refused, the running one gets its grace (1 s here), then it is killed
        long t0 = System.nanoTime();
        Thread closer = Thread.ofVirtual().start(small::close);
        HttpResponse<String> draining = await("/healthz answering other than 200 (draining)")
                .atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5))
                .until(() -> client.get("/healthz"), answer -> answer.statusCode() != 200);
        assertThat(draining.statusCode()).as("not ready while draining").isEqualTo(503);
        assertThat(json(draining).get("status").asString()).isEqualTo("draining");
        holder.join();
        closer.join();
        assertThat(slow).hasSize(1);
        assertThat(slow.getFirst().statusCode()).isEqualTo(200);
        assertThat(json(slow.getFirst()).get("status").asString()).isEqualTo("runtime_error");
        assertThat(json(slow.getFirst()).get("signal").asInt()).isEqualTo(9);
        assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(25_000);
    }
}
