package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Sessions admitted by what they are expected to use (issue 33 item 1): many more than their limits would allow fit a
 * budget, and when they all allocate at once the kernel kills inside their group, never beyond it. The server keeps
 * answering, a session hit gets {@code memory_limit} and a new interpreter, and nothing is left behind.
 */
class SessionOvercommitTest {
    static final int BUDGET_MB = 512;
    static final int REQUEST_MB = 32;
    static final int LIMIT_MB = 256;

    @Test
    void sessionsAllocatingAtOnceAreKilledInsideTheirBudgetAndTheServerGoesOn() throws Exception {
        ServerConfig config = Http.config();
        int groupsBefore = TestHost.crucible().sandbox().host().liveRunGroups(); // an earlier test's warm pool stays
        try (CrucibleServer server = CrucibleServer.start(config.withPort(0).withTokens(Set.of("t")).withPool(Map.of())
                .withSessions(config.sessions().withMaxSessions(40, 40).withBudgets(BUDGET_MB, 0)
                        .withMemoryRequest(REQUEST_MB)), TestHost.crucible())) {
            Http http = Http.to(server, "t");
            // admitted by their requests: 512 / 32 = 16 sessions whose limits sum to 4 GiB; the 17th is refused
            List<String> ids = new ArrayList<>();
            String create = "{\"language\": \"python\", \"limits\": {\"memory_mb\": " + LIMIT_MB + "}}";
            for (int i = 0; i < BUDGET_MB / REQUEST_MB; i++) {
                HttpResponse<String> r = http.postJson("/v1/sessions", create);
                assertThat(r.statusCode()).as("session %d: %s", i, r.body()).isEqualTo(201);
                ids.add(SessionApiTest.json(r).get("id").asString());
            }
            HttpResponse<String> refused = http.postJson("/v1/sessions", create);
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
            assertThat(SessionApiTest.error(refused)).isEqualTo("memory_budget_exhausted");
            JsonNode ready = SessionApiTest.json(http.get("/readyz"));
            assertThat(ready.toString()).contains("session_memory").contains("sessions reserve 512 of 512 MiB");
            String metrics = http.get("/metrics").body();
            assertThat(gauge(metrics, "crucible_sessions_memory_budget_bytes")).isEqualTo(BUDGET_MB << 20);
            assertThat(gauge(metrics, "crucible_sessions_memory_reserved_bytes")).isEqualTo(BUDGET_MB << 20);
            assertThat(gauge(metrics, "crucible_sessions_memory_used_bytes")).as("16 idle interpreters")
                    .isBetween(1L << 20, (long) BUDGET_MB << 20);

            // every session allocates 200 MiB at once, within its own limit: 3.2 GiB against a 512 MiB budget
            AtomicBoolean storm = new AtomicBoolean(true);
            AtomicLong peak = new AtomicLong();
            AtomicLong answered = new AtomicLong();
            List<String> statuses = new ArrayList<>();
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                Future<?> watcher = threads.submit(() -> {
                    while (storm.get()) {
                        assertThat(http.get("/healthz").statusCode()).isEqualTo(200);
                        answered.incrementAndGet();
                        peak.accumulateAndGet(TestHost.crucible().sandbox().sessionsMemoryBytes(), Math::max);
                    }
                    return null;
                });
                List<Future<HttpResponse<String>>> cells = new ArrayList<>();
                for (String id : ids) {
                    cells.add(threads.submit(() -> http.postJson("/v1/sessions/" + id + "/execute", "{\"code\":"
                            + " \"hog = b'x' * (200 << 20)\\nimport time\\ntime.sleep(2)\\nlen(hog)\"}")));
                }
                for (Future<HttpResponse<String>> cell : cells) {
                    HttpResponse<String> r = cell.get();
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                    statuses.add(SessionApiTest.json(r).get("status").asString());
                }
                storm.set(false);
                watcher.get();
            }
            assertThat(statuses).as("the kernel killed inside the sessions' group").contains("memory_limit")
                    .allMatch(s -> s.equals("ok") || s.equals("memory_limit"));
            assertThat(peak.get()).as("the sessions' group never passed its budget")
                    .isPositive().isLessThanOrEqualTo((long) BUDGET_MB << 20);
            assertThat(answered.get()).as("the server answered throughout").isPositive();
            for (String id : ids) { // a session hit has a new interpreter; all answer
                HttpResponse<String> r = http.postJson("/v1/sessions/" + id + "/execute", "{\"code\": \"6 * 7\"}");
                assertThat(SessionApiTest.json(r).get("result").asString()).as(r.body()).isEqualTo("42");
            }
            for (String id : ids) {
                http.delete("/v1/sessions/" + id);
            }
        }
        await("the sessions' cgroups swept").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
                .until(() -> TestHost.crucible().sandbox().host().liveRunGroups(), groups -> groups == groupsBefore);
        await("no process of a session uid left").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> TestHost.processesOfUids(62000, 65000), count -> count == 0);
    }

    static long gauge(String metrics, String name) {
        return metrics.lines().filter(l -> l.startsWith(name + " ")).map(l -> (long) Double.parseDouble(l.substring(
                name.length() + 1))).findFirst().orElseThrow(() -> new AssertionError(name + " is not in /metrics"));
    }
}
