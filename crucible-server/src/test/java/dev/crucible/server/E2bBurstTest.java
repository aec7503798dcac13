package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.server.access.Fairness;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The official E2B SDK, unmodified, firing a burst of creates at a server that makes one session at a time and lets
 * few wait (issue 50 item 1): the creates beyond the queue are answered 429 with a Retry-After, which the SDK honours
 * by waiting and asking again, so every create ends in a sandbox, none in an error, and nothing is left.
 */
class E2bBurstTest {
    @Test
    void theSdksBurstOfCreatesWaitsOnRetryAfterAndEveryCreateEndsInASandbox() throws Exception {
        ServerConfig config = Http.config().withPort(0).withTokens(Set.of(E2bSdkTest.TOKEN)).withPool(Map.of())
                .withFairness(new Fairness(0, 0, 1, 12, 0, 0));
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            E2bSdkTest.assertRun("burst", E2bSdkTest.nodeScenario("burst", server.port(), Map.of("E2B_BURST", "30")));
            JsonNode creates = SessionApiTest.json(Http.to(server, E2bSdkTest.TOKEN).get("/readyz")).get("queues")
                    .get("session_creates");
            assertThat(creates.get("refused").get("queue_full").asInt() + creates.get("refused")
                    .get("key_queue_full").asInt()).as("the burst met a full queue: the SDK asked again " + creates)
                    .isPositive();
            assertThat(creates.get("given").asInt()).isEqualTo(30);
        }
    }
}
