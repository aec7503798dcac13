package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.eval.dataset.DatasetRun;
import dev.crucible.server.services.Services;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Dataset evaluations run by the server ({@code /v1/evaluations}, issue 32): a run over HumanEval's example gets the
 * verdicts {@code crucible eval dataset} gets on this host, sample by sample; it is the token's alone; bad input is a
 * 4xx that leaves nothing; a run can be stopped, and one going on when the server stops is kept as stopped.
 */
class EvaluationRunsTest {
    static final Path DATA = Path.of("..", "crucible-eval", "src", "test", "resources", "data").toAbsolutePath()
            .normalize();
    static final JsonMapper JSON = JsonMapper.builder().build();

    static String body(String format, String problems, String samples, Map<String, Object> more) {
        Map<String, Object> body = new LinkedHashMap<>(Map.of("format", format, "problems", problems));
        if (samples != null) {
            body.put("samples", samples);
        }
        body.putAll(more);
        return JSON.writeValueAsString(body);
    }

    /** Waits (up to 2 minutes) until the evaluation is no longer running; its last state. */
    static JsonNode awaitEnd(Http http, String id) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            JsonNode info = SessionApiTest.json(http.get("/v1/evaluations/" + id));
            if (!info.get("state").asString().equals("running") || System.nanoTime() > deadline) {
                return info;
            }
            Thread.sleep(50);
        }
    }

    @Test
    void aRunOnTheServerGetsTheVerdictsOfEvalDatasetAndIsItsTokensAlone() throws Exception {
        String problems = Files.readString(DATA.resolve("example_problem.jsonl"));
        String samples = Files.readString(DATA.resolve("example_samples.jsonl"));
        Path local = Files.createTempFile("crucible-local-results-", ".jsonl");
        Files.delete(local);
        new DatasetRun(Services.stateless(TestHost.crucible()).judge()).run(new DatasetRun.Options("humaneval",
                DATA.resolve("example_problem.jsonl"), DATA.resolve("example_samples.jsonl"), List.of(1, 2), local, 2,
                3000), DatasetRun.Progress.NONE, new ArrayList<>());
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of("alice", "bob"))
                .withPool(Map.of()), TestHost.crucible())) {
            Http alice = Http.to(server, "alice");
            Http bob = Http.to(server, "bob");
            HttpResponse<String> started = alice.postJson("/v1/evaluations", body("humaneval", problems, samples,
                    Map.of("k", List.of(1, 2), "timeout_ms", 3000)));
            assertThat(started.statusCode()).as(started.body()).isEqualTo(202);
            JsonNode info = SessionApiTest.json(started);
            String id = info.get("id").asString();
            assertThat(started.headers().firstValue("Location")).hasValue("/v1/evaluations/" + id);
            assertThat(info.get("total").asInt()).isEqualTo(6);
            assertThat(bob.get("/v1/evaluations/" + id).statusCode()).as("another token's").isEqualTo(404);
            assertThat(bob.get("/v1/evaluations/" + id + "/results").statusCode()).isEqualTo(404);
            assertThat(bob.delete("/v1/evaluations/" + id).statusCode()).isEqualTo(404);
            assertThat(SessionApiTest.json(bob.get("/v1/evaluations")).get("evaluations")).isEmpty();

            JsonNode end = awaitEnd(alice, id);
            assertThat(end.get("state").asString()).as(end.toString()).isEqualTo("done");
            assertThat(end.get("done").asInt()).isEqualTo(6);
            assertThat(end.get("summary").get("pass_at_k").has("pass@1")).isTrue();
            assertThat(SessionApiTest.json(alice.get("/v1/evaluations")).get("evaluations").get(0).get("id").asString())
                    .isEqualTo(id);
            HttpResponse<String> results = alice.get("/v1/evaluations/" + id + "/results");
            assertThat(results.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/x-ndjson");
            assertThat(verdicts(results.body())).as("the server's verdicts are eval dataset's")
                    .isEqualTo(verdicts(Files.readString(local)));
            assertThat(results.body().strip().lines().reduce((a, b) -> b).orElseThrow()).contains("\"summary\"");
            assertThat(alice.delete("/v1/evaluations/" + id).statusCode()).isEqualTo(200);
            assertThat(alice.get("/v1/evaluations/" + id).statusCode()).isEqualTo(404);
        }
    }

    /** task_id#sample → passed and status, from a results file. */
    static Map<String, String> verdicts(String results) {
        Map<String, String> out = new TreeMap<>();
        for (String line : results.strip().split("\n")) {
            JsonNode r = JSON.readTree(line);
            if (r.has("task_id")) {
                out.put(r.get("task_id").asString() + "#" + r.get("sample").asInt(), r.get("passed").asBoolean() + " "
                        + r.get("status").asString());
            }
        }
        return out;
    }

    @Test
    void badInputIsAClearFourHundredAndLeavesNothing() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of());
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            String problems = Files.readString(DATA.resolve("example_problem.jsonl"));
            record Case(String body, int status, String code) {}
            for (Case c : List.of(
                    new Case("{\"problems\": \"x\"}", 400, "invalid_request"),
                    new Case(body("cobol", problems, null, Map.of()), 400, "invalid_request"),
                    new Case(body("humaneval", "not json at all\n", "{\"task_id\": \"x\", \"completion\": \"\"}",
                            Map.of()), 400, "invalid_request"),
                    new Case(body("humaneval", problems, "", Map.of("k", List.of(0))), 400, "invalid_request"),
                    new Case(body("humaneval", problems, null, Map.of("timeout_ms", 0)), 422, "invalid_limits"),
                    new Case("{\"format\": [", 400, "invalid_json"))) {
                HttpResponse<String> r = http.postJson("/v1/evaluations", c.body());
                assertThat(r.statusCode()).as(c.body() + " -> " + r.body()).isEqualTo(c.status());
                assertThat(SessionApiTest.error(r)).isEqualTo(c.code());
            }
            assertThat(SessionApiTest.json(http.get("/v1/evaluations")).get("evaluations")).isEmpty();
            try (var left = Files.list(config.sessions().dataDir().resolve("evaluations"))) {
                assertThat(left.toList()).as("nothing left by a refused run").isEmpty();
            }
            assertThat(http.get("/v1/evaluations/" + "0".repeat(32)).statusCode()).isEqualTo(404);
            assertThat(http.get("/v1/evaluations/..%2F..").statusCode()).isIn(400, 404);
        }
    }

    @Test
    void aRunCanBeStoppedAndOneGoingOnWhenTheServerStopsIsKeptAsStopped() throws Exception {
        String problems = Files.readString(DATA.resolve("example_problem.jsonl"));
        StringBuilder slow = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            slow.append("{\"task_id\": \"test/0\", \"completion\": \"    import time\\n    time.sleep(30)\\n"
                    + "    return 1\"}\n");
        }
        String request = body("humaneval", problems, slow.toString(), Map.of("timeout_ms", 60_000));
        ServerConfig config = Http.config().withPort(0).withPool(Map.of());
        String kept;
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            String first = SessionApiTest.json(http.postJson("/v1/evaluations", request)).get("id").asString();
            kept = SessionApiTest.json(http.postJson("/v1/evaluations", request)).get("id").asString();
            HttpResponse<String> third = http.postJson("/v1/evaluations", request);
            assertThat(third.statusCode()).as(third.body()).isEqualTo(429);
            assertThat(SessionApiTest.error(third)).isEqualTo("too_many_requests");
            assertThat(http.delete("/v1/evaluations/" + first).statusCode()).isEqualTo(200);
            assertThat(http.get("/v1/evaluations/" + first).statusCode()).isEqualTo(404);
            assertThat(Files.exists(config.sessions().dataDir().resolve("evaluations").resolve(first))).isFalse();
            assertThat(SessionApiTest.json(http.get("/v1/evaluations/" + kept)).get("state").asString()).isEqualTo("running");
        }
        try (CrucibleServer again = CrucibleServer.start(config, TestHost.crucible())) {
            JsonNode info = SessionApiTest.json(Http.to(again, null).get("/v1/evaluations/" + kept));
            assertThat(info.get("state").asString()).as(info.toString()).isEqualTo("stopped");
            assertThat(info.get("finished_at")).as("recorded when the server stopped it").isNotNull();
        }
    }
}
