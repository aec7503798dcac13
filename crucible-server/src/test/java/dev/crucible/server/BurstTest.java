package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.client.CrucibleClient;
import dev.crucible.client.ExecuteRequest;
import dev.crucible.server.access.Fairness;
import dev.crucible.server.http.AcceptQueue;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Bursts against a real server (issue 50 items 1 and 2): every request of a burst ends in its answer or in a refusal
 * that says which limit and when to come back (429 or 503 with Retry-After and {@code retry_after_s}), never another
 * 5xx, a reset connection or a hang; nothing is left of a refused create; and one token's burst does not hold another
 * token's single request behind it.
 */
class BurstTest {
    /** The answers of a burst, by status; what each refusal said. */
    private record Tally(Map<Integer, Integer> statuses, List<JsonNode> refusals, List<String> created) {}

    private static Tally burst(Http http, int n, String path, String body) throws Exception {
        Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
        List<JsonNode> refusals = Collections.synchronizedList(new ArrayList<>());
        List<String> created = Collections.synchronizedList(new ArrayList<>());
        try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                all.add(pool.submit(() -> {
                    HttpResponse<String> r = http.postJson(path, body);
                    statuses.merge(r.statusCode(), 1, Integer::sum);
                    if (r.statusCode() == 201) {
                        created.add(SessionApiTest.json(r).get("id").asText());
                    } else if (r.statusCode() != 200) {
                        JsonNode error = SessionApiTest.json(r).get("error");
                        assertThat(r.statusCode()).as(r.body()).isIn(429, 503);
                        assertThat(r.headers().firstValue("Retry-After")).as(r.body()).isPresent();
                        assertThat(error.get("retry_after_s").asInt()).as(r.body())
                                .isEqualTo(Integer.parseInt(r.headers().firstValue("Retry-After").orElseThrow()));
                        refusals.add(error);
                    }
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get(10, TimeUnit.MINUTES); // a hang fails here; a reset connection throws
            }
        }
        return new Tally(statuses, refusals, created);
    }

    @Test
    void aBurstOfCreatesEndsEachInASessionOrARefusalThatSaysWhenAndLeavesNothing() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of())
                .withFairness(new Fairness(0, 0, 1, 10, 0, 0));
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            Tally tally = burst(http, 40, "/v1/sessions", "{\"language\": \"python\"}");
            assertThat(tally.statuses().keySet()).as(tally.statuses().toString()).isSubsetOf(201, 429, 503);
            assertThat(tally.statuses().getOrDefault(201, 0)).as("one made at once, ten waiting: at least those")
                    .isGreaterThanOrEqualTo(11);
            assertThat(tally.refusals()).as("the queue's refusals name it")
                    .anySatisfy(e -> assertThat(e.get("message").asText()).contains("the queue of session creates"));
            JsonNode ready = SessionApiTest.json(http.get("/readyz")).get("queues").get("session_creates");
            assertThat(ready.get("max_running").asInt()).isEqualTo(1);
            assertThat(ready.get("max_queued").asInt()).isEqualTo(10);
            assertThat(ready.get("refused").get("queue_full").asInt()).isEqualTo(tally.refusals().size());
            assertThat(ready.get("queued").asInt()).isZero();
            String metrics = http.get("/metrics").body();
            assertThat(metrics).contains("crucible_turns_refused_total{reason=\"queue_full\",turns=\"session_creates\"} "
                    + tally.refusals().size() + ".0");

            for (String id : tally.created()) {
                assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
            }
            assertThat(SessionApiTest.json(http.get("/v1/sessions")).get("sessions").size()).isZero();
            try (var left = Files.list(config.sessions().dataDir().resolve("sessions"))) {
                assertThat(left.map(Path::getFileName).map(Path::toString).filter(n -> !n.startsWith(".")).toList())
                        .as("no directory of a session made or refused").isEmpty();
            }
        }
    }

    @Test
    void aQuietTokensRunIsNotHeldBehindAnotherTokensBurst() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of()).withTokens(Set.of("burst", "quiet"))
                .withConcurrency(1, 100);
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http burst = Http.to(server, "burst");
            Http quiet = Http.to(server, "quiet");
            AtomicInteger burstDone = new AtomicInteger();
            int n = 30;
            try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Integer>> all = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    all.add(pool.submit(() -> {
                        int status = burst.postJson("/v1/execute", "{\"language\": \"python\", \"code\":"
                                + " \"import time; time.sleep(0.2)\"}").statusCode();
                        burstDone.incrementAndGet();
                        return status;
                    }));
                }
                long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
                while (SessionApiTest.json(burst.get("/readyz")).get("queues").get("runs").get("queued").asInt()
                        < n / 2) {
                    assertThat(System.nanoTime()).as("the burst lines up").isLessThan(end);
                    Thread.sleep(5);
                }
                HttpResponse<String> mine = quiet.postJson("/v1/execute", "{\"language\": \"python\", \"code\":"
                        + " \"print(6 * 7)\"}");
                int before = burstDone.get();
                assertThat(mine.statusCode()).as(mine.body()).isEqualTo(200);
                assertThat(SessionApiTest.json(mine).get("stdout").asText()).isEqualTo("42\n");
                for (Future<Integer> f : all) {
                    assertThat(f.get(5, TimeUnit.MINUTES)).isEqualTo(200);
                }
                assertThat(n - before).as("the quiet token's run came before most of the burst, not after it")
                        .isGreaterThanOrEqualTo(n / 2 - 3);
            }
        }
    }

    /**
     * Crucible's Java client meets a full queue as E2B's SDK does: it waits the Retry-After (and a little more, at
     * random) and asks again, so the caller gets its answer, not the refusal.
     */
    @Test
    void theJavaClientWaitsOnRetryAfterAndGetsItsAnswer() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of()).withConcurrency(1, 0);
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
                Future<HttpResponse<String>> holder = pool.submit(() -> http.postJson("/v1/execute",
                        "{\"language\": \"python\", \"code\": \"import time; time.sleep(1.5)\"}"));
                awaitTheOneTurnHeld(http);
                CrucibleClient client = CrucibleClient.create(
                        URI.create("http://127.0.0.1:" + server.port()), null);
                var answer = client.execute(ExecuteRequest.of("python", "print(6 * 7)"));
                assertThat(answer.stdout()).isEqualTo("42\n");
                assertThat(holder.get(2, TimeUnit.MINUTES).statusCode()).isEqualTo(200);
            }
            assertThat(SessionApiTest.json(http.get("/readyz")).get("queues").get("runs").get("refused")
                    .get("queue_full").asInt()).as("it was refused first, and asked again").isPositive();
        }
    }

    /**
     * Judging and rewards take a turn per run as executes do: a burst of evaluations is queued and refused as one of
     * runs (it went straight to the sandboxes before), and a busy server answers a reward batch with 429 and when to
     * come back, never with rewards of 0 the programs did not earn.
     */
    @Test
    void evaluationsAndRewardsTakeTheRunsTurnsAndAreRefusedWholeWhenNoneIsFree() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of()).withConcurrency(1, 0);
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            String evaluate = "{\"language\": \"python\", \"code\": \"print(input())\", \"testcases\": ["
                    + "{\"stdin\": \"a\", \"expect\": \"a\"}, {\"stdin\": \"b\", \"expect\": \"b\"}],"
                    + " \"run_all_cases\": true}";
            String reward = "{\"messages\": [{\"role\": \"assistant\", \"content\": \"```python\\nprint(2)\\n```\"}],"
                    + " \"expected_output\": \"2\"}";
            try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
                Future<HttpResponse<String>> holder = pool.submit(() -> http.postJson("/v1/execute",
                        "{\"language\": \"python\", \"code\": \"import time; time.sleep(3)\"}"));
                awaitTheOneTurnHeld(http);
                for (var call : List.of(List.of("/v1/evaluate", evaluate), List.of("/v1/reward", reward),
                        List.of("/v1/reward/batch", "{\"items\": [" + reward + ", " + reward + "]}"))) {
                    HttpResponse<String> refused = http.postJson(call.get(0), call.get(1));
                    assertThat(refused.statusCode()).as(call.get(0) + ": " + refused.body()).isEqualTo(429);
                    assertThat(refused.headers().firstValue("Retry-After")).as(call.get(0)).isPresent();
                    assertThat(refused.body()).contains("too_many_requests").doesNotContain("\"score\"");
                }
                assertThat(holder.get(2, TimeUnit.MINUTES).statusCode()).isEqualTo(200);
            }
            long given = SessionApiTest.json(http.get("/readyz")).get("queues").get("runs").get("given").asLong();
            HttpResponse<String> judged = http.postJson("/v1/evaluate", evaluate);
            assertThat(judged.statusCode()).as(judged.body()).isEqualTo(200);
            assertThat(SessionApiTest.json(judged).get("passed").asInt()).isEqualTo(2);
            assertThat(SessionApiTest.json(http.get("/readyz")).get("queues").get("runs").get("given").asLong())
                    .as("a turn for each case").isEqualTo(given + 2);
        }
    }

    /** Waits until a run holds the server's one turn. */
    private static void awaitTheOneTurnHeld(Http http) throws Exception {
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (SessionApiTest.json(http.get("/readyz")).get("queues").get("runs").get("running").asInt() < 1) {
            assertThat(System.nanoTime()).as("the first run holds the one turn").isLessThan(end);
            Thread.sleep(5);
        }
    }

    /** The compatible APIs' runs take the same turns as {@code /v1/execute}'s: a burst through Piston is bounded too. */
    @Test
    void aPistonBurstTakesTheSameTurnsAndIsToldWhenToComeBack() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of()).withConcurrency(1, 1);
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
            try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<?>> all = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    all.add(pool.submit(() -> {
                        HttpResponse<String> r = http.postJson("/api/v2/execute", "{\"language\": \"python\","
                                + " \"version\": \"*\", \"files\": [{\"content\": \"import time; time.sleep(0.5)\"}]}");
                        statuses.merge(r.statusCode(), 1, Integer::sum);
                        if (r.statusCode() != 200) {
                            assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
                            assertThat(r.headers().firstValue("Retry-After")).isPresent();
                            assertThat(r.body()).as("Piston's own error shape").contains("\"message\"");
                        }
                        return null;
                    }));
                }
                for (Future<?> f : all) {
                    f.get(5, TimeUnit.MINUTES);
                }
            }
            assertThat(statuses.getOrDefault(200, 0)).as(statuses.toString()).isGreaterThanOrEqualTo(2);
            JsonNode runs = SessionApiTest.json(http.get("/readyz")).get("queues").get("runs");
            assertThat(runs.get("refused").get("queue_full").asInt()).as(runs.toString())
                    .isEqualTo(statuses.getOrDefault(429, 0)).isPositive();
        }
    }

    /**
     * A burst of connections waits in the kernel's accept queue while the server's cores are busy, instead of
     * overflowing it (the JDK's default backlog is 50: 300 creates at once were reset): the API's listener and the
     * preview listener ask for {@link AcceptQueue#DEPTH}, as {@code ss} shows.
     */
    @Test
    void theListenersQueueABurstOfConnectionsDeepEnough() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of()).withPreviewListen("127.0.0.1:0");
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            long somaxconn;
            try (var in = Files.newInputStream(Path.of("/proc/sys/net/core/somaxconn"))) {
                somaxconn = Long.parseLong(new String(in.readAllBytes()).strip()); // readString stops short in /proc
            }
            long want = Math.min(AcceptQueue.DEPTH, somaxconn);
            for (int port : new int[] {server.port(), server.previewPort()}) {
                Process ss = new ProcessBuilder("ss", "-Hltn", "sport = :" + port).redirectErrorStream(true).start();
                String line = new String(ss.getInputStream().readAllBytes()).strip();
                assertThat(ss.waitFor()).isZero();
                assertThat(line).as("ss -ltn for port " + port).startsWith("LISTEN");
                assertThat(Long.parseLong(line.split("\\s+")[2])).as("the backlog of port " + port + ": " + line)
                        .isEqualTo(want);
            }
        }
    }
}
