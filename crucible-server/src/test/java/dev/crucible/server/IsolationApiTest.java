package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.TestDirs;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.testhost.Capability;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The isolation tiers over HTTP (issue 29), against a real server whose runtimes TOML puts Python behind gVisor and
 * leaves JavaScript on the default: each result and runtime says its tier, a request may ask for a stronger tier
 * and never a weaker or unknown one, a Python session's interpreter and files live behind gVisor, and what the gVisor
 * tier does not give yet (egress, a session's commands) is refused with the reason, never run behind the weaker wall.
 */
class IsolationApiTest {
    static Crucible engine;
    static CrucibleServer server;
    static Http http;

    @BeforeAll
    static void start() throws Exception {
        Path toml = TestDirs.create("crucible-isolation-").resolve("runtimes.toml");
        Files.writeString(toml, """
                [[runtime]]
                language = "python"
                file_name = "main.py"
                run_command = ["python3", "{file}"]
                pool_command = ["python3", "-c", "{agent}", "{file}"]
                session_command = ["python3", "-c", "{repl}"]
                isolation = "gvisor"
                """);
        engine = Crucible.start(SandboxConfig.defaults().withSlots(4), toml);
        server = CrucibleServer.start(Http.config().withPort(0).withPool(Map.of()), engine);
        http = Http.to(server, null);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (engine != null) {
            engine.close();
        }
    }

    @Test
    void everyRuntimeSaysItsTier() throws Exception {
        JsonNode runtimes = SessionApiTest.json(http.get("/v1/runtimes"));
        Map<String, String> tiers = new HashMap<>();
        runtimes.forEach(r -> tiers.put(r.get("language").asString(), r.get("isolation").asString()));
        assertThat(tiers).containsEntry("python", "gvisor").containsEntry("javascript", "namespaces");
    }

    @Test
    void aWeakerOrUnknownTierIsRefusedAndEgressBehindGvisorIsNeverRunBehindNamespaces() throws Exception {
        HttpResponse<String> weaker = http.postJson("/v1/execute",
                "{\"language\": \"python\", \"code\": \"print(1)\", \"isolation\": \"namespaces\"}");
        assertThat(weaker.statusCode()).isEqualTo(400);
        assertThat(weaker.body()).contains("invalid_request", "never a weaker one");
        HttpResponse<String> unknown = http.postJson("/v1/execute",
                "{\"language\": \"javascript\", \"code\": \"1\", \"isolation\": \"firecracker\"}");
        assertThat(unknown.statusCode()).isEqualTo(400);
        assertThat(unknown.body()).contains("`isolation` is one of `namespaces`, `gvisor`");
        HttpResponse<String> egress = http.postJson("/v1/execute", "{\"language\": \"javascript\", \"code\": \"1\","
                + " \"isolation\": \"gvisor\", \"network\": {\"allow\": [\"pypi.org\"]}}");
        assertThat(egress.statusCode()).as(egress.body()).isIn(400, 403, 422);
        assertThat(egress.body()).doesNotContain("\"status\"");
    }

    @Test
    void aProgramRunsBehindTheTierItsResultNames() throws Exception {
        String why = engine.sandbox().host().isolationUnavailable(Isolation.GVISOR);
        if (why != null) {
            HttpResponse<String> refused = http.postJson("/v1/execute", "{\"language\": \"python\", \"code\": \"1\"}");
            assertThat(refused.statusCode()).isEqualTo(422);
            assertThat(refused.body()).contains("isolation_unavailable");
            Capability.GVISOR.require(why);
        }
        String hostKernel = Files.readString(Path.of("/proc/version"));
        String probe = "print(open('/proc/version').read(), end='')";
        JsonNode python = SessionApiTest.json(http.postJson("/v1/execute", "{\"language\": \"python\", \"code\": \""
                + probe + "\"}"));
        assertThat(python.get("isolation").asString()).isEqualTo("gvisor");
        assertThat(python.get("stdout").asString()).isNotEmpty().isNotEqualTo(hostKernel);
        String js = "console.log(require('fs').readFileSync('/proc/version', 'utf8').trim())";
        JsonNode plain = SessionApiTest.json(http.postJson("/v1/execute", "{\"language\": \"javascript\", \"code\": \""
                + js.replace("\"", "\\\"") + "\"}"));
        assertThat(plain.get("isolation").asString()).isEqualTo("namespaces");
        assertThat(plain.get("stdout").asString().strip()).isEqualTo(hostKernel.strip());
        JsonNode stronger = SessionApiTest.json(http.postJson("/v1/execute", "{\"language\": \"javascript\", \"code\":"
                + " \"" + js.replace("\"", "\\\"") + "\", \"isolation\": \"gvisor\"}"));
        assertThat(stronger.get("isolation").asString()).isEqualTo("gvisor");
        assertThat(stronger.get("stdout").asString().strip()).isNotEqualTo(hostKernel.strip());
    }

    @Test
    void aSessionMayAskForAStrongerTierThanItsRuntimesNeverAWeakerOneNorEgressBehindGvisor() throws Exception {
        HttpResponse<String> weaker = http.postJson("/v1/sessions", "{\"language\": \"python\", \"isolation\":"
                + " \"namespaces\"}");
        assertThat(weaker.statusCode()).as(weaker.body()).isEqualTo(400);
        assertThat(weaker.body()).contains("invalid_request", "runs behind gvisor", "never a weaker one");
        HttpResponse<String> egress = http.postJson("/v1/sessions", "{\"language\": \"javascript\", \"isolation\":"
                + " \"gvisor\", \"network\": {\"allow\": [\"pypi.org\"]}}");
        assertThat(egress.statusCode()).as(egress.body()).isIn(403, 422);
        assertThat(SessionApiTest.json(http.get("/v1/sessions")).get("sessions").size()).as("nothing was made").isZero();
    }

    @Test
    void aSessionOfAGvisorRuntimeKeepsItsInterpreterAndFilesBehindGvisor() throws Exception {
        String why = engine.sandbox().host().isolationUnavailable(Isolation.GVISOR);
        Capability.GVISOR.require(why);
        JsonNode created = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}"));
        String id = created.get("id").asString();
        assertThat(created.get("isolation").asString()).as("its runtime's tier").isEqualTo("gvisor");
        try {
            String base = "/v1/sessions/" + id;
            assertThat(SessionApiTest.json(http.postJson(base + "/execute", "{\"code\": \"x = 41\"}"))
                    .get("status").asString()).isEqualTo("ok");
            JsonNode cell = SessionApiTest.json(http.postJson(base + "/execute", "{\"code\": \"open('kernel.txt',"
                    + " 'w').write(open('/proc/version').read()); x + 1\"}"));
            assertThat(cell.get("result").asString()).as(cell.toString()).isEqualTo("42");
            HttpResponse<String> file = http.get(base + "/files/kernel.txt");
            assertThat(file.statusCode()).isEqualTo(200);
            assertThat(file.body()).as("written by gVisor's kernel's interpreter, read by the files API").isNotEmpty()
                    .isNotEqualTo(Files.readString(Path.of("/proc/version")));
            JsonNode stopped = SessionApiTest.json(http.postJson(base + "/execute", "{\"code\": \"while True: pass\","
                    + " \"timeout_ms\": 1500}"));
            assertThat(stopped.get("status").asString()).as(stopped.toString()).isEqualTo("timeout");
            JsonNode kept = SessionApiTest.json(http.postJson(base + "/execute", "{\"code\": \"x + 2\"}"));
            assertThat(kept.get("result").asString()).as("interrupted by gVisor's kernel, not restarted: " + kept)
                    .isEqualTo("43");
            assertThat(kept.get("restarted").asBoolean()).isFalse();
            HttpResponse<String> command = http.postJson(base + "/commands", "{\"command\": \"id\"}");
            assertThat(command.statusCode()).as("no supervisor behind gVisor yet: " + command.body()).isEqualTo(503);
            assertThat(command.body()).as("the reason is the tier's, not a build's").contains("behind gVisor")
                    .doesNotContain("C compiler");
        } finally {
            http.delete("/v1/sessions/" + id);
        }
    }
}
