package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.egress.PackageIndex;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.testhost.Capability;
import dev.crucible.testhost.NetnsHost;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Egress over HTTP against the real server: a request or session asks for {@code network: {allow}} within the
 * operator's list and reaches a real package index through the proxy; {@code pip install} and {@code npm install} in a
 * session work, and what pip installed imports after the server restarts; a session locks its egress for good; a wider
 * request is a 422 naming what is not allowed. The index runs on a {@link NetnsHost}: a private address, which the
 * operator lists verbatim.
 */
class EgressApiTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
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

    /** A server whose operator allows the index and pypi.org, on {@link #dataDir} (so a restart keeps sessions). */
    private static CrucibleServer server() {
        return CrucibleServer.start(Http.config().withDataDir(dataDir).withPort(0).withTokens(Set.of())
                .withPool(Map.of()).withEgress(EgressPolicy.parse(index.allowEntry() + ",pypi.org,*.pythonhosted.org")),
                TestHost.crucible());
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return JSON.readTree(r.body());
    }

    private static String body(Object fields) {
        return JSON.writeValueAsString(fields);
    }

    /** Runs {@code command} from a Python cell; prints its exit code and output. */
    private static String shell(List<String> command) {
        return "import subprocess\nr = subprocess.run(" + body(command) + ", capture_output=True, text=True, "
                + "cwd='/workspace')\nprint('exit', r.returncode)\nprint(r.stdout[-3000:], r.stderr[-3000:])";
    }

    private static JsonNode cell(Http http, String id, String code) throws Exception {
        JsonNode r = ok(http.postJson("/v1/sessions/" + id + "/execute", body(Map.of("code", code))), 200);
        assertThat(r.get("status").asString()).as(r.toString()).isEqualTo("ok");
        return r;
    }

    @Test
    void anExecuteWithNetworkReachesTheListedIndexAndReportsEachConnection() throws Exception {
        try (CrucibleServer server = server()) {
            Http http = Http.to(server, null);
            JsonNode r = ok(http.postJson("/v1/execute", body(Map.of("language", "python", "network",
                    Map.of("allow", List.of(index.allowEntry())), "code", """
                            import urllib.request
                            print(urllib.request.urlopen('%scrucible-demo-a/', timeout=20).read().decode())
                            try:
                                urllib.request.urlopen('http://%s:1/', timeout=20)
                            except Exception as e:
                                print('refused:', e)
                            """.formatted(index.pypiUrl(), index.host())))), 200);
            assertThat(r.get("stdout").asString()).as(r.toString()).contains("crucible_demo_a-1.0-py3-none-any.whl")
                    .contains("refused: HTTP Error 403");
            assertThat(r.at("/network/allow/0").asString()).isEqualTo(index.allowEntry());
            JsonNode connections = r.at("/network/connections");
            assertThat(connections.size()).isEqualTo(2);
            assertThat(connections.get(0).get("allowed").asBoolean()).isTrue();
            assertThat(connections.get(0).get("bytes_received").asLong()).isPositive();
            assertThat(connections.get(1).get("reason").asString()).isEqualTo("port_not_listed");
        }
    }

    @Test
    void aRequestWiderThanTheOperatorsListIs422NamingWhatIsNotAllowed() throws Exception {
        try (CrucibleServer server = server()) {
            Http http = Http.to(server, null);
            JsonNode r = ok(http.postJson("/v1/execute", body(Map.of("language", "python", "code", "print(1)",
                    "network", Map.of("allow", List.of("pypi.org", "evil.example.com", index.host() + ":22"))))), 422);
            assertThat(r.at("/error/code").asString()).isEqualTo("egress_not_allowed");
            assertThat(r.at("/error/message").asString()).as("pypi.org is allowed: only the other two are named")
                    .contains("allowlist: evil.example.com:443, " + index.host() + ":22 (");
            JsonNode session = ok(http.postJson("/v1/sessions", body(Map.of("network",
                    Map.of("allow", List.of("files.example.com"))))), 422);
            assertThat(session.at("/error/code").asString()).isEqualTo("egress_not_allowed");
            JsonNode bad = ok(http.postJson("/v1/execute", body(Map.of("language", "python", "code", "print(1)",
                    "network", Map.of("mode", "open")))), 400);
            assertThat(bad.at("/error/message").asString()).isEqualTo("`network.mode` is one of `allowlist`, `none`");
        }
    }

    @Test
    void aServerWithoutAnEgressListRefusesEveryRequestForNetwork() throws Exception {
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withPool(Map.of()), TestHost.crucible())) {
            JsonNode r = ok(Http.to(server, null).postJson("/v1/execute", body(Map.of("language", "python",
                    "code", "print(1)", "network", Map.of("allow", List.of("pypi.org"))))), 422);
            assertThat(r.at("/error/message").asString()).contains("--egress-allow");
        }
    }

    @Test
    void pipInstallInASessionWorksThroughTheProxyLocksAndSurvivesAServerRestart() throws Exception {
        String id;
        try (CrucibleServer server = server()) {
            Http http = Http.to(server, null);
            JsonNode created = ok(http.postJson("/v1/sessions", body(Map.of("language", "python", "network",
                    Map.of("allow", List.of(index.allowEntry()))))), 201);
            id = created.get("id").asString();
            assertThat(created.at("/network/allow/0").asString()).isEqualTo(index.allowEntry());
            JsonNode pip = cell(http, id, shell(List.of("/usr/bin/python3", "-m", "pip", "install", "--no-cache-dir",
                    "--disable-pip-version-check", "--index-url", index.pypiUrl(), "--trusted-host", index.host(),
                    "crucible-demo-a")));
            assertThat(pip.get("stdout").asString()).contains("exit 0")
                    .contains("Successfully installed crucible-demo-a-1.0 crucible-demo-b-1.0");
            assertThat(cell(http, id, "import crucible_demo_a; print(crucible_demo_a.hello())").get("stdout").asString())
                    .isEqualTo("hello from a\n");
            JsonNode info = ok(http.get("/v1/sessions/" + id), 200);
            assertThat(info.at("/network/connections").findValuesAsString("reason")).contains("allowed");

            JsonNode widened = ok(http.postJson("/v1/sessions/" + id + "/network",
                    body(Map.of("allow", List.of(index.allowEntry(), "pypi.org")))), 422);
            assertThat(widened.at("/error/code").asString()).isEqualTo("egress_not_allowed");
            JsonNode locked = ok(http.postJson("/v1/sessions/" + id + "/network", body(Map.of("allow", List.of()))), 200);
            assertThat(locked.at("/network/allow").size()).isZero();
            JsonNode again = cell(http, id, shell(List.of("/usr/bin/python3", "-m", "pip", "download",
                    "--no-cache-dir", "--disable-pip-version-check", "--retries", "0", "-d", "/tmp/x",
                    "--index-url", index.pypiUrl(), "--trusted-host", index.host(), "crucible-demo-b")));
            assertThat(again.get("stdout").asString()).contains("exit 1").contains("No matching distribution");
            assertThat(ok(http.get("/v1/sessions/" + id), 200).at("/network/connections").findValuesAsString("reason"))
                    .as("the proxy refused pip after the lock").contains("not_listed");
        }
        try (CrucibleServer restarted = server()) {
            Http http = Http.to(restarted, null);
            JsonNode r = cell(http, id, "import crucible_demo_a; print(crucible_demo_a.hello())");
            assertThat(r.get("stdout").asString()).isEqualTo("hello from a\n");
            assertThat(r.get("resumed").asBoolean()).isTrue();
            assertThat(ok(http.get("/v1/sessions/" + id), 200).at("/network/allow").size())
                    .as("locked for good, across the restart").isZero();
            // its sandbox may listen on its own loopback (its ports), but nothing out: not the index, not a proxy
            JsonNode offline = cell(http, id, "import socket\nfor t in [('" + index.host() + "', " + index.port()
                    + "), ('127.0.0.1', 3128)]:\n    try:\n        socket.create_connection(t, 5).close()\n"
                    + "        print('reached')\n    except OSError as e:\n        print('refused', e.errno)");
            assertThat(offline.get("stdout").asString()).as("ENETUNREACH, then ECONNREFUSED")
                    .isEqualTo("refused 101\nrefused 111\n");
            ok(http.delete("/v1/sessions/" + id), 200);
        }
    }

    @Test
    void npmInstallInASessionWorksThroughTheProxy() throws Exception {
        try (CrucibleServer server = server()) {
            Http http = Http.to(server, null);
            String id = ok(http.postJson("/v1/sessions", body(Map.of("language", "python", "network",
                    Map.of("allow", List.of(index.allowEntry()))))), 201).get("id").asString();
            JsonNode npm = cell(http, id, shell(List.of("npm", "install", "--no-audit", "--no-fund",
                    "--registry", index.npmUrl(), "crucible-demo")));
            assertThat(npm.get("stdout").asString()).contains("exit 0");
            JsonNode run = cell(http, id, shell(List.of("node", "-e", "console.log(require('crucible-demo')())")));
            assertThat(run.get("stdout").asString()).contains("exit 0").contains("hello from npm");
            assertThat(index.requests()).contains("/npm/crucible-demo", "/npm/crucible-demo/-/crucible-demo-1.0.0.tgz");
            ok(http.delete("/v1/sessions/" + id), 200);
        }
    }
}
