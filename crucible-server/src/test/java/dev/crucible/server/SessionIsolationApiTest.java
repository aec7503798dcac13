package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.crucible.Crucible;
import dev.crucible.TestDirs;
import dev.crucible.TestHost;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.SandboxConfig;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A session's tier (issue 48, item 3): {@code POST /v1/sessions {"isolation": "gvisor"}} on a server whose Python runs
 * on the namespace tier runs the session's interpreter behind gVisor (its {@code /proc/version} is gVisor's kernel's,
 * not the host's), says so in its info and listing, and keeps it through a pause, a restart of the server, a fork and
 * a snapshot; an unknown tier is refused, and a tier the server cannot give is {@code 422 isolation_unavailable} with
 * the reason. The refusal of a weaker tier than the runtime's is {@link IsolationApiTest}'s (a gVisor runtime).
 */
class SessionIsolationApiTest {
    private static final String PROBE = "print(open('/proc/version').read(), end='')";

    private static JsonNode post(Http http, String path, String body) throws Exception {
        return TwoTierServer.post(http, path, body);
    }

    /** What the session's interpreter reads as its kernel's version. */
    private static String cell(Http http, String id) throws Exception {
        JsonNode r = post(http, "/v1/sessions/" + id + "/execute", "{\"code\": \"" + PROBE + "\"}");
        assertThat(r.get("status").asString()).as(r.toString()).isEqualTo("ok");
        return r.get("stdout").asString();
    }

    private static String hostKernel() throws Exception {
        return Files.readString(Path.of("/proc/version"));
    }

    @Test
    void aSessionAskedForGvisorRunsBehindItAndKeepsItThroughPauseRestartForkAndSnapshot() throws Exception {
        String why = TestHost.crucible().sandbox().host().isolationUnavailable(Isolation.GVISOR);
        assumeTrue(why == null, "skipped: " + why);
        ServerConfig config = Http.config().withPort(0).withPool(Map.of());
        CrucibleServer server = CrucibleServer.start(config, TestHost.crucible());
        try {
            Http http = Http.to(server, null);
            JsonNode plain = post(http, "/v1/sessions", "{\"language\": \"python\"}");
            assertThat(plain.get("isolation").asString()).isEqualTo("namespaces");
            assertThat(cell(http, plain.get("id").asString())).isEqualTo(hostKernel());

            JsonNode made = post(http, "/v1/sessions", "{\"language\": \"python\", \"isolation\": \"gvisor\"}");
            String id = made.get("id").asString();
            assertThat(made.get("isolation").asString()).isEqualTo("gvisor");
            assertThat(cell(http, id)).as("gVisor's kernel answers, not the host's").startsWith("Linux version")
                    .isNotEqualTo(hostKernel());
            assertThat(SessionApiTest.json(http.get("/v1/sessions/" + id)).get("isolation").asString())
                    .isEqualTo("gvisor");
            JsonNode listed = SessionApiTest.json(http.get("/v1/sessions"));
            assertThat(StreamSupport.stream(listed.get("sessions").spliterator(), false)
                    .filter(s -> s.get("id").asString().equals(id)).map(s -> s.get("isolation").asString()))
                    .containsExactly("gvisor");

            TwoTierServer.cell(http, id, "x = 41");
            assertThat(post(http, "/v1/sessions/" + id + "/pause", "{}").get("keeps").asString()).isEqualTo("memory");
            server.close(); // a paused session outlives the server, its tier with it
            server = CrucibleServer.start(config, TestHost.crucible());
            http = Http.to(server, null);
            assertThat(SessionApiTest.json(http.get("/v1/sessions/" + id)).get("isolation").asString())
                    .as("read back from its record").isEqualTo("gvisor");
            assertThat(post(http, "/v1/sessions/" + id + "/resume", "{}").get("restored").asString())
                    .as("gVisor saved it whole").isEqualTo("memory");
            assertThat(TwoTierServer.cell(http, id, "x + 1")).isEqualTo("42");
            assertThat(cell(http, id)).isNotEqualTo(hostKernel());

            JsonNode fork = post(http, "/v1/sessions/" + id + "/fork", "{\"count\": 1}").get("forks").get(0);
            assertThat(fork.get("isolation").asString()).isEqualTo("gvisor");
            assertThat(TwoTierServer.cell(http, fork.get("id").asString(), "x + 2")).isEqualTo("43");
            assertThat(cell(http, fork.get("id").asString())).as("the fork runs behind gVisor too")
                    .isNotEqualTo(hostKernel());

            post(http, "/v1/sessions/" + id + "/snapshots", "{\"name\": \"behind-gvisor\"}");
            JsonNode restored = post(http, "/v1/sessions", "{\"snapshot\": \"behind-gvisor\"}");
            assertThat(restored.get("isolation").asString()).isEqualTo("gvisor");
            assertThat(cell(http, restored.get("id").asString())).isNotEqualTo(hostKernel());
            HttpResponse<String> weaker = http.postJson("/v1/sessions", "{\"snapshot\": \"behind-gvisor\","
                    + " \"isolation\": \"namespaces\"}");
            assertThat(weaker.statusCode()).as(weaker.body()).isEqualTo(400);
            assertThat(weaker.body()).contains("invalid_request", "never a weaker one");
        } finally {
            server.close();
        }
    }

    @Test
    void anUnknownTierIsRefusedSayingWhichThereAre() throws Exception {
        CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withPool(Map.of()), TestHost.crucible());
        try {
            HttpResponse<String> r = Http.to(server, null).postJson("/v1/sessions", "{\"isolation\": \"firecracker\"}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
            assertThat(r.body()).contains("invalid_request", "`isolation` is one of `namespaces`, `gvisor`");
        } finally {
            server.close();
        }
    }

    @Test
    void aTierThisServerCannotGiveIsRefusedWithTheReason() throws Exception {
        Path missing = TestDirs.create("crucible-no-runsc-").resolve("runsc");
        try (Crucible engine = Crucible.start(SandboxConfig.defaults().withSlots(2).withRunsc(missing, null), null)) {
            assertThat(engine.sandbox().host().isolationUnavailable(Isolation.GVISOR)).isNotNull();
            CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withPool(Map.of()), engine);
            try {
                HttpResponse<String> r = Http.to(server, null).postJson("/v1/sessions", "{\"isolation\": \"gvisor\"}");
                assertThat(r.statusCode()).as(r.body()).isEqualTo(422);
                JsonNode error = SessionApiTest.json(r).get("error");
                assertThat(error.get("code").asString()).isEqualTo("isolation_unavailable");
                assertThat(error.get("message").asString()).contains("gvisor", "not available on this server: ")
                        .contains(engine.sandbox().host().isolationUnavailable(Isolation.GVISOR));
                assertThat(SessionApiTest.json(Http.to(server, null).get("/v1/sessions")).get("sessions").size())
                        .as("nothing was made").isZero();
            } finally {
                server.close();
            }
        }
    }
}
