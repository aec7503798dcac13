package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 25, item 8: replicas started with one name (on one host without {@code --replica}, all take the host name)
 * make session ids with one prefix and answer each other's sessions 404. Real servers in this JVM, real HTTP between
 * them: a replica that finds a peer answering to its own name refuses every session route with a 503 that says how to
 * fix it, logs it once, and serves again once the other is gone; replicas with distinct names serve and forward.
 */
class ReplicaNameConflictTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    /** The parent of the server's and the sessions' loggers, held: JUL keeps loggers only weakly. */
    private static final Logger CRUCIBLE_LOG = Logger.getLogger("crucible");
    static final String NONE = "/v1/sessions/twin.00000000000000000000000000000000";
    private final List<CrucibleServer> servers = new ArrayList<>();
    private final List<LogRecord> logged = new CopyOnWriteArrayList<>();
    private final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            logged.add(record);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    @BeforeEach
    void captureLog() {
        CRUCIBLE_LOG.addHandler(capture);
    }

    @AfterEach
    void stop() {
        CRUCIBLE_LOG.removeHandler(capture);
        servers.forEach(CrucibleServer::close);
    }

    private CrucibleServer replica(int port, String name, String... peers) {
        CrucibleServer server = CrucibleServer.start(Http.config().withPort(port).withTokens(Set.of())
                .withPool(Map.of()).withCluster(new ServerConfig.Cluster(name, List.of(peers))), TestHost.crucible());
        servers.add(server);
        return server;
    }

    private static int freePort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    /** Asks {@code server} for its sessions until the answer's status is {@code status} (a state, not a time). */
    private static HttpResponse<String> awaitSessions(CrucibleServer server, int status) throws Exception {
        // the peers are asked every 5 s
        HttpResponse<String> r = await("GET /v1/sessions answered " + status).atMost(Duration.ofMinutes(1))
                .pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
                .until(() -> Http.to(server, null).get("/v1/sessions"), answer -> answer.statusCode() == status);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return r;
    }

    private long logged(Level level, Predicate<String> message) {
        return logged.stream().filter(r -> r.getLevel() == level && message.test(r.getMessage())).count();
    }

    @Test
    void twoReplicasWithOneNameRefuseSessionsWith503SayingHowToFixItUntilOneIsGone() throws Exception {
        int[] ports = {freePort(), freePort()};
        String a = "http://127.0.0.1:" + ports[0];
        String b = "http://127.0.0.1:" + ports[1];
        // each lists itself first: a replica that answers with its own instance is itself, not a conflict
        CrucibleServer first = replica(ports[0], "twin", a, b);
        assertThat(Http.to(first, null).get("/v1/sessions").statusCode()).as("alone, it serves").isEqualTo(200);
        CrucibleServer second = replica(ports[1], "twin", b, a);

        // the second finds the first at start-up; the first finds the second on its next periodic check
        for (CrucibleServer server : List.of(second, first)) {
            Http http = Http.to(server, null);
            String other = server == first ? b : a;
            HttpResponse<String> listed = awaitSessions(server, 503);
            List<HttpResponse<String>> refused = List.of(listed, http.postJson("/v1/sessions", "{}"), http.get(NONE),
                    http.postJson(NONE + "/execute", "{\"code\": \"1\"}"), http.delete(NONE), http.get(NONE + "/files"));
            for (HttpResponse<String> r : refused) {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                JsonNode error = JSON.readTree(r.body()).get("error");
                assertThat(error.get("code").asString()).isEqualTo("replica_name_conflict");
                assertThat(error.get("message").asString()).contains("the peer at " + other, "'twin'",
                        "give each replica a distinct --replica NAME").doesNotContain("the peer at "
                        + (server == first ? a : b));
            }
            // readiness says why (a balancer takes the replica out), while /healthz still names it for its peers
            HttpResponse<String> ready = http.get("/readyz");
            assertThat(ready.statusCode()).as(ready.body()).isEqualTo(503);
            assertThat(JSON.readTree(ready.body()).get("reason").asString()).startsWith("peers: ")
                    .contains("the peer at " + other, "--replica NAME");
            assertThat(http.get("/healthz").body()).contains("\"replica\":\"twin\"", "\"instance\":");
            // only sessions: stateless runs go on
            HttpResponse<String> run = http.postJson("/v1/execute", "{\"language\": \"bash\", \"code\": \"echo 42\"}");
            assertThat(run.statusCode()).as(run.body()).isEqualTo(200);
            assertThat(run.body()).contains("42");
        }
        // one warning per replica, however many requests were refused
        assertThat(logged(Level.WARNING, m -> m.contains("the peer at " + b) && m.contains("--replica"))).isEqualTo(1);
        assertThat(logged(Level.WARNING, m -> m.contains("the peer at " + a) && m.contains("--replica"))).isEqualTo(1);

        second.close();
        servers.remove(second);
        awaitSessions(first, 200);
        assertThat(Http.to(first, null).get("/readyz").statusCode()).isEqualTo(200);
        assertThat(logged(Level.INFO, m -> m.contains("sessions are served again"))).isEqualTo(1);
        assertThat(Http.to(first, null).get(NONE).statusCode()).isEqualTo(404);
    }

    @Test
    void replicasWithDistinctNamesServeAndForwardEachOthersSessions() throws Exception {
        CrucibleServer alpha = replica(0, "alpha");
        CrucibleServer beta = replica(0, "beta", "http://127.0.0.1:" + alpha.port());
        HttpResponse<String> created = Http.to(alpha, null).postJson("/v1/sessions", "{}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).get("id").asString();
        assertThat(id).startsWith("alpha.");
        // called through beta: beta learns alpha's name from its /healthz and forwards
        HttpResponse<String> cell = Http.to(beta, null).postJson("/v1/sessions/" + id + "/execute",
                "{\"code\": \"print('forwarded')\"}");
        assertThat(cell.statusCode()).as(cell.body()).isEqualTo(200);
        assertThat(cell.body()).contains("forwarded");
        assertThat(Http.to(beta, null).get("/v1/sessions").statusCode()).isEqualTo(200);
        assertThat(Http.to(beta, null).delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        assertThat(logged(Level.WARNING, m -> m.contains("answers to this replica's name"))).isZero();
        assertThat(logged(Level.WARNING, m -> m.contains("cannot remove all of"))).as("a replica's session lease file"
                + " goes with its session").isZero();
    }
}
