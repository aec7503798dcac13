package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * E2B's {@code lifecycle.autoResume} (issue 50 item 3) over real HTTP, as the SDKs send it ({@code autoPause: true,
 * autoResume: {enabled: true}}): a paused sandbox made so is resumed by its own traffic (the code interpreter, envd, a
 * port through the preview listener with its traffic token), its deadline its timeout from then; one made without it
 * answers E2B's 502 to the same traffic until {@code connect}.
 */
class E2bAutoResumeTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String KEY = "e2b_" + "0123456789abcdef".repeat(2) + "01234567";
    private static CrucibleServer server;
    private static String base;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withPool(Map.of()).withTokens(Set.of(KEY))
                .withPreviewListen("127.0.0.1:0"), TestHost.crucible());
        base = "http://127.0.0.1:" + server.port();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static JsonNode create(boolean autoResume) throws Exception {
        Map<String, Object> body = new LinkedHashMap<>(Map.of("templateID", "base", "timeout", 300,
                "autoPause", true));
        if (autoResume) {
            body.put("autoResume", Map.of("enabled", true));
        }
        return E2bSparesTest.create(base, body);
    }

    private static HttpResponse<String> control(String method, String path) throws Exception {
        return E2bSparesTest.send(HttpRequest.newBuilder(URI.create(base + path)).header("X-API-KEY", KEY)
                .header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(
                        method.equals("POST") ? "{}" : "")));
    }

    private static JsonNode info(JsonNode sandbox) throws Exception {
        return JSON.readTree(control("GET", "/sandboxes/" + sandbox.get("sandboxID").asString()).body());
    }

    private static void pause(JsonNode sandbox) throws Exception {
        assertThat(control("POST", "/sandboxes/" + sandbox.get("sandboxID").asString() + "/pause").statusCode())
                .isEqualTo(204);
        assertThat(info(sandbox).path("state").asString()).isEqualTo("paused");
    }

    private static HttpResponse<String> stat(JsonNode sandbox, String path) throws Exception {
        return E2bSparesTest.send(HttpRequest.newBuilder(URI.create(base + "/filesystem.Filesystem/Stat"))
                .header("E2b-Sandbox-Id", sandbox.get("sandboxID").asString()).header("E2b-Sandbox-Port", "49983")
                .header("X-Access-Token", sandbox.get("envdAccessToken").asString())
                .header("Content-Type", "application/json").header("Connect-Protocol-Version", "1")
                .POST(HttpRequest.BodyPublishers.ofString("{\"path\": \"" + path + "\"}")));
    }

    @Test
    void aPausedSandboxMadeWithAutoResumeIsResumedByItsTraffic() throws Exception {
        JsonNode s = create(true);
        assertThat(info(s).path("lifecycle").toString()).isEqualTo("{\"onTimeout\":\"pause\",\"autoResume\":true}");
        E2bSparesTest.execute(base, s, "open('/home/user/kept.txt', 'w').write('kept')");
        pause(s);
        long before = System.currentTimeMillis();
        assertThat(E2bSparesTest.execute(base, s, "open('/home/user/kept.txt').read()")).as("the code interpreter")
                .contains("\"text\":\"'kept'\"");
        JsonNode running = info(s);
        assertThat(running.path("state").asString()).isEqualTo("running");
        assertThat(Instant.parse(running.path("endAt").asString()).toEpochMilli()).as("its timeout from the resume")
                .isGreaterThanOrEqualTo(before + 299_000);

        pause(s);
        HttpResponse<String> stat = stat(s, "/home/user/kept.txt");
        assertThat(stat.statusCode()).as("envd: " + stat.body()).isEqualTo(200);
        assertThat(info(s).path("state").asString()).isEqualTo("running");

        pause(s);
        String host = "8000-" + s.get("sandboxID").asString() + "." + s.get("domain").asString();
        try (Socket socket = new Socket("127.0.0.1", server.previewPort())) { // nothing listens: its answer is 502
            socket.getOutputStream().write(("GET / HTTP/1.1\r\nHost: " + host + "\r\ne2b-traffic-access-token: "
                    + s.get("trafficAccessToken").asString() + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            socket.getInputStream().readAllBytes();
        }
        assertThat(info(s).path("state").asString()).as("a port through the preview listener").isEqualTo("running");
        assertThat(control("DELETE", "/sandboxes/" + s.get("sandboxID").asString()).statusCode()).isEqualTo(204);
    }

    @Test
    void aPausedSandboxWithoutAutoResumeRefusesTrafficUntilConnect() throws Exception {
        JsonNode s = create(false);
        assertThat(info(s).path("lifecycle").path("autoResume").asBoolean(true)).isFalse();
        pause(s);
        HttpResponse<String> refused = E2bSparesTest.send(HttpRequest.newBuilder(URI.create(base + "/execute"))
                .header("E2b-Sandbox-Id", s.get("sandboxID").asString()).header("E2b-Sandbox-Port", "49999")
                .header("X-Access-Token", s.get("envdAccessToken").asString())
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{\"code\": \"1\"}")));
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(502);
        assertThat(JSON.readTree(refused.body()).path("code").asInt()).isEqualTo(502);
        assertThat(stat(s, "/home/user").statusCode()).isEqualTo(502);
        assertThat(info(s).path("state").asString()).as("still paused").isEqualTo("paused");
        assertThat(control("POST", "/sandboxes/" + s.get("sandboxID").asString() + "/connect").statusCode())
                .isEqualTo(200);
        assertThat(E2bSparesTest.execute(base, s, "1 + 1")).contains("\"text\":\"2\"");
        assertThat(control("DELETE", "/sandboxes/" + s.get("sandboxID").asString()).statusCode()).isEqualTo(204);
    }

    @Test
    void autoResumeWithoutAutoPauseIsRefused() throws Exception {
        HttpResponse<String> r = E2bSparesTest.send(HttpRequest.newBuilder(URI.create(base + "/v2/sandboxes"))
                .header("X-API-KEY", KEY).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers
                        .ofString("{\"templateID\": \"base\", \"autoResume\": {\"enabled\": true}}")));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(r.body()).contains("autoPause");
    }
}
