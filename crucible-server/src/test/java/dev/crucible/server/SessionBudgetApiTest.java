package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 10, class 3 over HTTP: a full memory budget is a 429 with Retry-After, a full disk budget a 507 (each session
 * admitted for its whole limit here; SessionOvercommitTest admits them by their requests).
 */
class SessionBudgetApiTest {
    static final JsonMapper JSON = JsonMapper.builder().build();

    static HttpResponse<String> createWith(long memoryBudgetMb, long diskBudgetBytes) throws Exception {
        ServerConfig config = Http.config();
        try (CrucibleServer server = CrucibleServer.start(config.withPort(0).withTokens(Set.of("t")).withPool(Map.of())
                .withSessions(config.sessions().withBudgets(memoryBudgetMb, diskBudgetBytes).withMemoryRequest(0)),
                TestHost.crucible())) {
            return Http.to(server, "t").postJson("/v1/sessions", "{\"limits\": {\"memory_mb\": 256}}");
        }
    }

    @Test
    void aFullMemoryBudgetAnswers429WithRetryAfter() throws Exception {
        HttpResponse<String> r = createWith(128, 0);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
        assertThat(r.headers().firstValue("Retry-After")).isPresent();
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertThat(error.get("code").asString()).isEqualTo("memory_budget_exhausted");
        assertThat(error.get("message").asString()).contains("128 MiB");
    }

    @Test
    void aFullDiskBudgetAnswers507() throws Exception {
        HttpResponse<String> r = createWith(0, 1024 * 1024);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(507);
        assertThat(JSON.readTree(r.body()).get("error").get("code").asString()).isEqualTo("disk_budget_exhausted");
    }
}
