package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import dev.crucible.egress.PackageIndex;
import dev.crucible.egress.StalledOrigin;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.testhost.Capability;
import dev.crucible.testhost.NetnsHost;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The fault "an egress origin stalls a tunnel" on the real server: an origin on a test host accepts the connection
 * and then stops ({@link StalledOrigin}). A run or a cell waiting on it answers by its deadline (measured by the
 * client: the request itself times out otherwise), the proxy lets go of the origin, nothing is left behind, and what follows works:
 * a healthy index on the same host is reached by the next run and the same session.
 */
class EgressStallTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final long TIMEOUT_MS = 3_000;
    /** The client's bound beyond a request's own deadline. */
    static final Duration SLACK = Duration.ofSeconds(5);
    @RegisterExtension
    static final NetnsHost HOST = NetnsHost.extension();
    static PackageIndex index;
    @TempDir
    static Path dataDir;

    @BeforeAll
    static void startTheIndex() throws Exception {
        String unavailable = TestHost.crucible().sandbox().egressUnavailable();
        Capability.EGRESS.require(unavailable);
        index = PackageIndex.start(HOST);
        Files.setPosixFilePermissions(dataDir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @AfterAll
    static void stopTheIndex() {
        if (index != null) {
            index.close();
        }
    }

    private static CrucibleServer server(StalledOrigin stalled) {
        return CrucibleServer.start(Http.config().withDataDir(dataDir).withPort(0).withTokens(Set.of())
                .withPool(Map.of()).withEgress(EgressPolicy.parse(stalled.allowEntry() + "," + index.allowEntry())),
                TestHost.crucible());
    }

    /** POSTs {@code body}; fails unless the answer arrives within {@code deadline} + {@link #SLACK}. */
    private static JsonNode post(Http http, String path, Object body, Duration deadline) throws Exception {
        HttpResponse<String> r = http.client().send(HttpRequest.newBuilder(URI.create(http.base() + path))
                .header("Content-Type", "application/json").timeout(deadline.plus(SLACK))
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isIn(200, 201);
        return JSON.readTree(r.body());
    }

    /**
     * {@link TestHost#assertNothingLeft()} once a removed session's cgroups are gone: they are swept in the background
     * after its sandbox has ended.
     */
    private static void assertNothingLeft() throws Exception {
        await("the removed session's cgroups swept").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
                .until(() -> TestHost.crucible().sandbox().host().liveRunGroups(), groups -> groups == 0);
        TestHost.assertNothingLeft();
    }

    private static final String FETCH = "import urllib.request\nprint(urllib.request.urlopen('%scrucible-demo-a/',"
            + " timeout=20).read().decode())";

    @ParameterizedTest
    @EnumSource(StalledOrigin.Stall.class)
    void anExecuteWaitingOnAStalledOriginAnswersByItsDeadlineAndTheNextRunWorks(StalledOrigin.Stall stall)
            throws Exception {
        try (StalledOrigin stalled = StalledOrigin.start(HOST, stall); CrucibleServer server = server(stalled)) {
            Http http = Http.to(server, null);
            JsonNode r = post(http, "/v1/execute", Map.of("language", "python", "code", stalled.waitingProgram(),
                    "limits", Map.of("timeout_ms", TIMEOUT_MS),
                    "network", Map.of("allow", List.of(stalled.allowEntry()))), Duration.ofMillis(TIMEOUT_MS));
            assertThat(r.get("status").asString()).as(r.toString()).isEqualTo("timeout");
            assertThat(r.get("stdout").asString()).startsWith("HTTP/1.1 200").doesNotContain("answered");
            assertThat(r.at("/network/connections").findValuesAsString("ending")).as(r.toString())
                    .containsExactly("proxy_closed");
            assertThat(stalled.stalled()).isEqualTo(1);
            assertThat(stalled.heldAfter(Duration.ofSeconds(10))).as("connections the proxy still holds").isZero();
            TestHost.assertNothingLeft();

            JsonNode next = post(http, "/v1/execute", Map.of("language", "python", "code",
                    FETCH.formatted(index.pypiUrl()), "network", Map.of("allow", List.of(index.allowEntry()))),
                    Duration.ofSeconds(30));
            assertThat(next.get("stdout").asString()).as(next.toString()).contains("crucible_demo_a-1.0");
        }
        TestHost.assertNothingLeft();
    }

    @Test
    void aCellWaitingOnAStalledOriginAnswersByItsTimeoutAndTheSessionWorksAfter() throws Exception {
        try (StalledOrigin stalled = StalledOrigin.start(HOST, StalledOrigin.Stall.SILENT);
                CrucibleServer server = server(stalled)) {
            Http http = Http.to(server, null);
            String id = post(http, "/v1/sessions", Map.of("language", "python", "network",
                    Map.of("allow", List.of(stalled.allowEntry(), index.allowEntry()))), Duration.ofSeconds(30))
                    .get("id").asString();
            String cells = "/v1/sessions/" + id + "/execute";
            post(http, cells, Map.of("code", "x = 41"), Duration.ofSeconds(30));

            JsonNode stuck = post(http, cells, Map.of("code", stalled.waitingProgram(), "timeout_ms", TIMEOUT_MS),
                    Duration.ofMillis(TIMEOUT_MS));
            assertThat(stuck.get("status").asString()).as(stuck.toString()).isEqualTo("timeout");
            assertThat(stuck.get("restarted").asBoolean()).isFalse();
            assertThat(stalled.stalled()).isEqualTo(1);

            JsonNode after = post(http, cells, Map.of("code", "print(x + 1)\n" + FETCH.formatted(index.pypiUrl())),
                    Duration.ofSeconds(30));
            assertThat(after.get("stdout").asString()).as(after.toString()).startsWith("42\n")
                    .contains("crucible_demo_a-1.0");
            // the cell's socket is still the session's (a variable holds it): the tunnel lives until the session ends
            assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
            assertThat(stalled.heldAfter(Duration.ofSeconds(10))).as("connections the proxy still holds").isZero();
        }
        assertNothingLeft();
    }

    @Test
    void aCellThatIgnoresTheInterruptIsRestartedAndTheProxyLetsGoOfItsStalledOrigin() throws Exception {
        Duration grace = SessionConfig.defaults(dataDir).grace();
        try (StalledOrigin stalled = StalledOrigin.start(HOST, StalledOrigin.Stall.MID_RESPONSE);
                CrucibleServer server = server(stalled)) {
            Http http = Http.to(server, null);
            String id = post(http, "/v1/sessions", Map.of("language", "python", "network",
                    Map.of("allow", List.of(stalled.allowEntry(), index.allowEntry()))), Duration.ofSeconds(30))
                    .get("id").asString();
            String cells = "/v1/sessions/" + id + "/execute";

            JsonNode stuck = post(http, cells, Map.of("timeout_ms", TIMEOUT_MS, "code",
                    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + stalled.waitingProgram()),
                    Duration.ofMillis(TIMEOUT_MS).plus(grace));
            assertThat(stuck.get("status").asString()).as(stuck.toString()).isEqualTo("timeout");
            assertThat(stuck.at("/error/message").asString()).contains("the session was restarted");
            assertThat(stalled.stalled()).isEqualTo(1);
            // the session and its proxy live on; the sandbox that made the connection does not
            assertThat(stalled.heldAfter(Duration.ofSeconds(10))).as("connections the proxy still holds").isZero();

            JsonNode after = post(http, cells, Map.of("code", FETCH.formatted(index.pypiUrl())),
                    Duration.ofSeconds(30));
            assertThat(after.get("stdout").asString()).as(after.toString()).contains("crucible_demo_a-1.0");
            assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        }
        assertNothingLeft();
    }
}
