package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.sandbox.Isolation;
import dev.crucible.testhost.Capability;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * E2B's protocol as its SDKs send it (issue 28), byte for byte from their sources, against the real server and
 * sandbox: the requests the Python SDK sends differently from the JavaScript one (which {@code E2bSdkTest} drives for
 * real), the Connect framing of envd, the code interpreter's lines, and what must be refused: another token's
 * sandbox through each plane, a missing or wrong access token, malformed and oversized envelopes.
 */
class E2bApiTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String KEY = "e2b_" + "0123456789abcdef".repeat(2) + "01234567";
    private static final String OTHER_KEY = "e2b_" + "fedcba9876543210".repeat(2) + "76543210";
    private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    private static CrucibleServer server;
    private static String base;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withPool(Map.of()).withTokens(Set.of(KEY, OTHER_KEY))
                .withE2bTemplates(Map.of("shell-box", "bash")), TestHost.crucible());
        base = "http://127.0.0.1:" + server.port();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** A sandbox made as the Python SDK makes one: {@code POST /sandboxes}, its defaults in the body. */
    private static JsonNode create(String key) throws Exception {
        HttpResponse<String> r = send(control("/sandboxes", key).POST(body(Map.of("templateID", "base", "timeout", 300,
                "secure", true, "allow_internet_access", true, "metadata", Map.of("run", "py"), "envVars",
                Map.of("GREETING", "hi")))));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body());
    }

    private static HttpRequest.Builder control(String path, String key) {
        return HttpRequest.newBuilder(URI.create(base + path)).header("X-API-KEY", key)
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(60));
    }

    private static HttpRequest.Builder envd(JsonNode sandbox, String path, String port) {
        return HttpRequest.newBuilder(URI.create(base + path)).header("E2b-Sandbox-Id", sandbox.get("sandboxID")
                .asString()).header("E2b-Sandbox-Port", port).header("X-Access-Token", sandbox.get("envdAccessToken")
                .asString()).timeout(Duration.ofSeconds(60));
    }

    private static HttpRequest.BodyPublisher body(Object json) {
        return HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(json));
    }

    private static HttpResponse<String> send(HttpRequest.Builder b) throws IOException, InterruptedException {
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> unary(JsonNode sandbox, String method, Object message) throws Exception {
        return send(envd(sandbox, "/" + method, "49983").header("Content-Type", "application/json")
                .header("Connect-Protocol-Version", "1").POST(body(message)));
    }

    /** One Connect envelope: flags, a big-endian length, the JSON. */
    private static byte[] envelope(int flags, byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(flags);
        out.write(payload.length >>> 24);
        out.write(payload.length >>> 16);
        out.write(payload.length >>> 8);
        out.write(payload.length);
        out.writeBytes(payload);
        return out.toByteArray();
    }

    /** A server stream's envelopes, the end-of-stream one last: [flags, json] each. */
    private static List<Object[]> stream(JsonNode sandbox, String method, Object message, Map<String, String> headers)
            throws Exception {
        HttpRequest.Builder b = envd(sandbox, "/" + method, "49983").header("Content-Type", "application/connect+json")
                .header("Connect-Protocol-Version", "1").POST(HttpRequest.BodyPublishers.ofByteArray(
                        envelope(0, JSON.writeValueAsBytes(message))));
        headers.forEach(b::header);
        HttpResponse<InputStream> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        if (r.statusCode() == 400) { // refused before it began: malformed beyond Connect's own errors
            r.body().close();
            return List.of();
        }
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("application/connect+json");
        List<Object[]> frames = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(r.body())) {
            while (true) {
                int flags = in.readUnsignedByte();
                byte[] payload = in.readNBytes(in.readInt());
                frames.add(new Object[] {flags, JSON.readTree(payload)});
                if ((flags & 2) != 0) {
                    return frames;
                }
            }
        }
    }

    /** The error code of the end-of-stream envelope a Start call with {@code body} gets, in a 200 answer. */
    private static String streamError(JsonNode sandbox, byte[] body) throws Exception {
        HttpResponse<byte[]> r = CLIENT.send(envd(sandbox, "/process.Process/Start", "49983")
                .header("Content-Type", "application/connect+json").POST(HttpRequest.BodyPublishers.ofByteArray(body))
                .build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).isEqualTo(200);
        byte[] b = r.body();
        assertThat(b[0]).as("end of stream").isEqualTo((byte) 2);
        return JSON.readTree(Arrays.copyOfRange(b, 5, b.length)).get("error").get("code").asString();
    }

    @Test
    void thePythonSdksRequestsGetWhatItReads() throws Exception {
        JsonNode s = create(KEY);
        for (String field : List.of("sandboxID", "templateID", "clientID", "envdVersion", "envdAccessToken")) {
            assertThat(s.get(field).isString()).as(field + " in " + s).isTrue();
        }
        String id = s.get("sandboxID").asString();

        HttpResponse<String> info = send(control("/sandboxes/" + id, KEY).GET());
        assertThat(info.statusCode()).isEqualTo(200);
        JsonNode detail = JSON.readTree(info.body());
        for (String field : List.of("templateID", "sandboxID", "clientID", "startedAt", "endAt", "envdVersion",
                "cpuCount", "memoryMB", "diskSizeMB", "state")) {
            assertThat(detail.has(field)).as(field + " in " + detail).isTrue();
        }
        assertThat(detail.get("metadata").get("run").asString()).isEqualTo("py");
        assertThat(send(control("/sandboxes/" + id + "/timeout", KEY).POST(body(Map.of("timeout", 600))))
                .statusCode()).isEqualTo(204);
        HttpResponse<String> connected = send(control("/sandboxes/" + id + "/connect", KEY)
                .POST(body(Map.of("timeout", 300))));
        assertThat(connected.statusCode()).isIn(200, 201);
        JsonNode listed = JSON.readTree(send(control("/v2/sandboxes?metadata=run%3Dpy", KEY).GET()).body());
        assertThat(listed.findValuesAsString("sandboxID")).contains(id);
        assertThat(JSON.readTree(send(control("/v2/sandboxes?metadata=run%3Dother", KEY).GET()).body()).size()).isZero();
        assertThat(send(control("/v2/sandboxes?limit=many", KEY).GET()).statusCode()).isEqualTo(400);
        assertThat(send(control("/v2/sandboxes?nextToken=zz", KEY).GET()).statusCode()).isEqualTo(400);
        assertThat(send(control("/v2/sandboxes?nextToken=-1", KEY).GET()).statusCode()).isEqualTo(400);
        assertThat(send(control("/v2/sandboxes", KEY).POST(body(Map.of("templateID", Map.of("a", 1))))).statusCode())
                .isEqualTo(400);
        assertThat(send(control("/v2/sandboxes", KEY).POST(body(Map.of("network", Map.of("allowOut", List.of(
                Map.of())))))).statusCode()).isEqualTo(400);
        assertThat(send(control("/sandboxes", KEY).POST(HttpRequest.BodyPublishers.ofString("{\"templateID\": "))).statusCode())
                .isEqualTo(400);
        assertThat(send(control("/sandboxes", KEY).POST(body(Map.of("metadata", List.of(1))))).statusCode())
                .isEqualTo(400);

        // envd: multipart upload as the SDKs write it, a download, the directory made with it
        String boundary = "----crucible" + System.nanoTime();
        byte[] multipart = ("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"script.py\""
                + "\r\nContent-Type: application/octet-stream\r\n\r\nprint(sum(range(10)))\n\r\n--" + boundary + "--\r\n")
                .getBytes(StandardCharsets.UTF_8);
        HttpResponse<String> up = send(envd(s, "/files?path=%2Fcode%2Fscript.py", "49983")
                .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                .POST(HttpRequest.BodyPublishers.ofByteArray(multipart)));
        assertThat(up.statusCode()).as(up.body()).isEqualTo(200);
        assertThat(JSON.readTree(up.body()).get(0).get("path").asString()).isEqualTo("/code/script.py");
        HttpResponse<String> down = send(envd(s, "/files?path=%2Fcode%2Fscript.py", "49983").GET());
        assertThat(down.body()).isEqualTo("print(sum(range(10)))\n");
        assertThat(down.headers().firstValue("Content-Disposition")).as("a download, never a page on the API's origin")
                .hasValue("attachment; filename=\"script.py\"; filename*=UTF-8''script.py");
        assertThat(down.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
        assertThat(down.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(csp ->
                assertThat(csp).startsWith("sandbox"));
        HttpResponse<String> missing = send(envd(s, "/files?path=nothing.txt", "49983").GET());
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(missing.body()).get("code").asInt()).isEqualTo(404);

        // the filesystem service: mkdir -p, then already_exists; a relative path is the home's
        HttpResponse<String> made = unary(s, "filesystem.Filesystem/MakeDir", Map.of("path", "/code/a/b"));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(200);
        assertThat(JSON.readTree(made.body()).get("entry").get("type").asString()).isEqualTo("FILE_TYPE_DIRECTORY");
        HttpResponse<String> again = unary(s, "filesystem.Filesystem/MakeDir", Map.of("path", "/code/a/b"));
        assertThat(again.statusCode()).isEqualTo(409);
        assertThat(JSON.readTree(again.body()).get("code").asString()).isEqualTo("already_exists");
        JsonNode listing = JSON.readTree(unary(s, "filesystem.Filesystem/ListDir", Map.of("path", "/code", "depth", 2))
                .body());
        assertThat(listing.get("entries").findValuesAsString("path")).contains("/code/script.py", "/code/a",
                "/code/a/b");
        HttpResponse<String> stat = unary(s, "filesystem.Filesystem/Stat", Map.of("path", "/code/none"));
        assertThat(stat.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(stat.body()).get("code").asString()).isEqualTo("not_found");
        // the root is a directory as any other, however it is spelt; '..' stops at it (issue 48)
        for (String root : List.of("/", "/home/user/../..", "/../..", "/.", "../../..", "..")) {
            HttpResponse<String> top = unary(s, "filesystem.Filesystem/Stat", Map.of("path", root));
            assertThat(top.statusCode()).as(root + ": " + top.body()).isEqualTo(200);
            JsonNode entry = JSON.readTree(top.body()).get("entry");
            assertThat(entry.get("type").asString()).as(root).isEqualTo("FILE_TYPE_DIRECTORY");
            if (!root.equals("..")) { // the home's parent
                assertThat(entry.get("path").asString()).as(root).isEqualTo("/");
                assertThat(entry.get("name").asString()).as(root).isEqualTo("/");
            }
        }
        JsonNode top = JSON.readTree(unary(s, "filesystem.Filesystem/ListDir", Map.of("path", "/workspace/..")).body());
        assertThat(top.get("entries").findValuesAsString("path")).contains("/workspace", "/home", "/usr");
        assertThat(JSON.readTree(unary(s, "filesystem.Filesystem/Stat", Map.of("path", "/workspace")).body())
                .get("entry").get("type").asString()).isEqualTo("FILE_TYPE_DIRECTORY");
        assertThat(unary(s, "filesystem.Filesystem/Remove", Map.of("path", "/home/user/../../")).statusCode())
                .isEqualTo(400);

        // the process service: a stream of start, data and end, then the end of the stream
        List<Object[]> frames = stream(s, "process.Process/Start", Map.of("process", Map.of("cmd", "/bin/bash",
                "args", List.of("-l", "-c", "python3 /code/script.py; echo $GREETING; echo oops >&2; exit 3")),
                "stdin", false), Map.of("Connect-Timeout-Ms", "60000"));
        JsonNode first = (JsonNode) frames.getFirst()[1];
        assertThat(first.get("event").get("start").get("pid").asLong()).isPositive();
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        JsonNode end = null;
        for (Object[] f : frames) {
            JsonNode event = ((JsonNode) f[1]).path("event");
            if (event.has("data")) {
                JsonNode d = event.get("data");
                (d.has("stdout") ? out : err).append(new String(Base64.getDecoder().decode(
                        (d.has("stdout") ? d.get("stdout") : d.get("stderr")).asString()), StandardCharsets.UTF_8));
            } else if (event.has("end")) {
                end = event.get("end");
            }
        }
        assertThat(out.toString()).isEqualTo("45\nhi\n");
        assertThat(err.toString()).isEqualTo("oops\n");
        assertThat(end).isNotNull();
        assertThat(end.get("exitCode").asInt()).isEqualTo(3);
        assertThat((int) frames.getLast()[0]).isEqualTo(2);
        assertThat(((JsonNode) frames.getLast()[1]).has("error")).isFalse();

        // a timeout is Connect-Timeout-Ms, and ends the stream in deadline_exceeded
        List<Object[]> slow = stream(s, "process.Process/Start", Map.of("process", Map.of("cmd", "/bin/sleep",
                "args", List.of("30"))), Map.of("Connect-Timeout-Ms", "500"));
        assertThat(((JsonNode) slow.getLast()[1]).get("error").get("code").asString()).isEqualTo("deadline_exceeded");

        // the code interpreter: the lines of one cell
        HttpResponse<String> exec = send(envd(s, "/execute", "49999").header("Content-Type", "application/json")
                .POST(body(Map.of("code", "print(6*7)\n1+1"))));
        assertThat(exec.statusCode()).isEqualTo(200);
        List<JsonNode> lines = exec.body().lines().map(JSON::readTree).toList();
        assertThat(lines.getFirst().get("type").asString()).isEqualTo("number_of_executions");
        assertThat(lines).anySatisfy(l -> {
            assertThat(l.get("type").asString()).isEqualTo("stdout");
            assertThat(l.get("text").asString()).isEqualTo("42\n");
            assertThat(l.has("timestamp")).isTrue();
        });
        assertThat(lines).anySatisfy(l -> assertThat(l.path("text").asString("") + l.get("type").asString())
                .isEqualTo("2result"));
        List<JsonNode> failed = send(envd(s, "/execute", "49999").header("Content-Type", "application/json")
                .POST(body(Map.of("code", "raise ValueError('boom')")))).body().lines().map(JSON::readTree).toList();
        assertThat(failed).anySatisfy(l -> {
            assertThat(l.get("type").asString()).isEqualTo("error");
            assertThat(l.get("name").asString()).isEqualTo("ValueError");
            assertThat(l.get("value").asString()).isEqualTo("boom");
            assertThat(l.get("traceback").asString()).contains("ValueError");
        });

        assertThat(send(envd(s, "/health", "49983").GET()).statusCode()).isEqualTo(204);
        assertThat(send(control("/sandboxes/" + id, KEY).DELETE()).statusCode()).isEqualTo(204);
        HttpResponse<String> twice = send(control("/sandboxes/" + id, KEY).DELETE());
        assertThat(twice.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(twice.body()).get("code").asInt()).isEqualTo(404);
        assertThat(send(envd(s, "/health", "49983").GET()).statusCode()).isEqualTo(502);
    }

    /**
     * E2B's planes are counted in {@code /metrics} as every route is (issue 51 item 1): by plane, method and status, the
     * plane a label of a few values whatever path a caller sends.
     */
    @Test
    void e2bCallsAreCountedInTheMetricsByPlane() throws Exception {
        JsonNode sandbox = create(KEY);
        assertThat(unary(sandbox, "filesystem.Filesystem/ListDir", Map.of("path", "/")).statusCode()).isEqualTo(200);
        assertThat(send(control("/sandboxes/" + sandbox.get("sandboxID").asString() + "/no-such-action", KEY)
                .POST(body(Map.of()))).statusCode()).isEqualTo(404);
        String metrics = send(HttpRequest.newBuilder(URI.create(base + "/metrics")).header("Authorization",
                "Bearer " + KEY)).body();
        assertThat(metrics).contains("crucible_http_requests_total{method=\"POST\",route=\"e2b control plane\","
                + "status=\"201\"}").contains("route=\"e2b control plane\",status=\"404\"}")
                .contains("crucible_http_requests_total{method=\"POST\",route=\"e2b envd\",status=\"200\"}")
                .doesNotContain("no-such-action");
        assertThat(send(control("/sandboxes/" + sandbox.get("sandboxID").asString(), KEY).DELETE()).statusCode())
                .isEqualTo(204);
    }

    @Test
    void aTemplateNamesTheSessionsTierAndGvisorIsPythonBehindGvisor() throws Exception {
        String why = TestHost.crucible().sandbox().host().isolationUnavailable(Isolation.GVISOR);
        Capability.GVISOR.require(why);
        for (String template : List.of("gvisor", "python@gvisor")) {
            HttpResponse<String> made = send(control("/v2/sandboxes", KEY).POST(body(Map.of("templateID", template))));
            assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
            String id = JSON.readTree(made.body()).get("sandboxID").asString();
            HttpResponse<String> info = send(HttpRequest.newBuilder(URI.create(base + "/v1/sessions/" + id))
                    .header("Authorization", "Bearer " + KEY).timeout(Duration.ofSeconds(60)).GET());
            assertThat(JSON.readTree(info.body()).get("isolation").asString()).as(template).isEqualTo("gvisor");
            assertThat(JSON.readTree(info.body()).get("language").asString()).isEqualTo("python");
            assertThat(send(control("/sandboxes/" + id, KEY).DELETE()).statusCode()).isEqualTo(204);
        }
    }

    @Test
    void aTemplateIsWhatTheOperatorNamedAndAnUnknownOneIsE2bs404() throws Exception {
        HttpResponse<String> made = send(control("/v2/sandboxes", KEY).POST(body(Map.of("templateID", "shell-box",
                "envVars", Map.of("GREETING", "it's $HOME")))));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        JsonNode s = JSON.readTree(made.body());
        assertThat(s.get("templateID").asString()).isEqualTo("shell-box");
        HttpResponse<String> exec = send(envd(s, "/execute", "49999").header("Content-Type", "application/json")
                .POST(body(Map.of("code", "echo $((6 * 7)); echo \"$GREETING\""))));
        assertThat(exec.body()).as("a bash sandbox runs bash cells, its envs exported as given")
                .contains("\"text\":\"42\\nit's $HOME\\n\"");
        assertThat(send(control("/sandboxes/" + s.get("sandboxID").asString(), KEY).DELETE()).statusCode())
                .isEqualTo(204);
        HttpResponse<String> unknown = send(control("/v2/sandboxes", KEY).POST(body(Map.of("templateID", "nope"))));
        assertThat(unknown.statusCode()).as(unknown.body()).isEqualTo(404);
        assertThat(JSON.readTree(unknown.body()).get("code").asInt()).isEqualTo(404);
    }

    @Test
    void aConnectRequestIsOneMessageAndAnythingAfterItIsRefusedBeforeAnythingRuns() throws Exception {
        JsonNode sandbox = create(KEY);
        byte[] start = envelope(0, JSON.writeValueAsBytes(Map.of("process", Map.of("cmd", "/bin/mkdir", "args",
                List.of("/tmp/started")))));
        ByteArrayOutputStream twice = new ByteArrayOutputStream();
        twice.writeBytes(start);
        twice.writeBytes(envelope(0, "{}".getBytes()));
        assertThat(streamError(sandbox, twice.toByteArray())).as("a second envelope").isEqualTo("invalid_argument");
        ByteArrayOutputStream trailing = new ByteArrayOutputStream();
        trailing.writeBytes(start);
        trailing.write(0);
        assertThat(streamError(sandbox, trailing.toByteArray())).as("a byte after it").isEqualTo("invalid_argument");
        assertThat(streamError(sandbox, Arrays.copyOf(start, start.length - 1))).as("a partial one")
                .isEqualTo("invalid_argument");
        assertThat(streamError(sandbox, new byte[0])).as("none").isEqualTo("invalid_argument");
        HttpResponse<String> twoValues = send(envd(sandbox, "/filesystem.Filesystem/MakeDir", "49983")
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
                        "{\"path\": \"/tmp/made\"} {\"path\": \"/tmp/other\"}")));
        assertThat(twoValues.statusCode()).as(twoValues.body()).isEqualTo(400);
        assertThat(JSON.readTree(twoValues.body()).get("code").asString()).isEqualTo("invalid_argument");
        for (String path : List.of("/tmp/started", "/tmp/made")) {
            assertThat(JSON.readTree(unary(sandbox, "filesystem.Filesystem/Stat", Map.of("path", path)).body())
                    .path("code").asString()).as("nothing ran: " + path).isEqualTo("not_found");
        }
        assertThat(send(control("/sandboxes/" + sandbox.get("sandboxID").asString(), KEY).DELETE()).statusCode())
                .isEqualTo(204);
    }

    @Test
    void anotherTokensSandboxIsNotFoundThroughAnyPlaneAndEveryTokenIsChecked() throws Exception {
        JsonNode mine = create(KEY);
        JsonNode theirs = create(OTHER_KEY);
        String theirId = theirs.get("sandboxID").asString();
        assertThat(send(control("/sandboxes/" + theirId, KEY).GET()).statusCode()).isEqualTo(404);
        assertThat(send(control("/sandboxes/" + theirId, KEY).DELETE()).statusCode()).isEqualTo(404);
        assertThat(send(control("/sandboxes/" + theirId + "/timeout", KEY).POST(body(Map.of("timeout", 1))))
                .statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(send(control("/v2/sandboxes", KEY).GET()).body()).findValuesAsString("sandboxID"))
                .contains(mine.get("sandboxID").asString()).doesNotContain(theirId);
        assertThat(send(control("/sandboxes", "e2b_00").GET()).statusCode()).isEqualTo(401);
        assertThat(send(HttpRequest.newBuilder(URI.create(base + "/v2/sandboxes")).GET()).statusCode()).isEqualTo(401);

        // my access token on their sandbox, and none at all, on envd and the interpreter
        HttpRequest.Builder crossed = HttpRequest.newBuilder(URI.create(base + "/files?path=%2Fetc%2Fhostname"))
                .header("E2b-Sandbox-Id", theirId).header("E2b-Sandbox-Port", "49983")
                .header("X-Access-Token", mine.get("envdAccessToken").asString());
        assertThat(send(crossed.GET()).statusCode()).isEqualTo(401);
        assertThat(send(HttpRequest.newBuilder(URI.create(base + "/files?path=%2Fetc%2Fhostname"))
                .header("E2b-Sandbox-Id", theirId).header("E2b-Sandbox-Port", "49983").GET()).statusCode())
                .isEqualTo(401);
        assertThat(send(HttpRequest.newBuilder(URI.create(base + "/execute")).header("E2b-Sandbox-Id", theirId)
                .header("E2b-Sandbox-Port", "49999").header("X-Access-Token", mine.get("envdAccessToken").asString())
                .header("Content-Type", "application/json").POST(body(Map.of("code", "1")))).statusCode())
                .isEqualTo(401);

        // contexts: the SDK sends them no access token, only the sandbox's traffic token; an id alone opens nothing
        HttpRequest.Builder contexts = HttpRequest.newBuilder(URI.create(base + "/contexts"))
                .header("E2b-Sandbox-Id", mine.get("sandboxID").asString()).header("E2b-Sandbox-Port", "49999");
        assertThat(send(contexts.copy().GET()).statusCode()).isEqualTo(401);
        assertThat(send(contexts.copy().header("E2B-Traffic-Access-Token", theirs.get("trafficAccessToken").asString())
                .GET()).statusCode()).isEqualTo(401);
        assertThat(send(contexts.copy().header("E2B-Traffic-Access-Token", mine.get("trafficAccessToken").asString())
                .GET()).statusCode()).isEqualTo(200);
        assertThat(send(HttpRequest.newBuilder(URI.create(base + "/contexts/default/restart"))
                .header("E2b-Sandbox-Id", mine.get("sandboxID").asString()).header("E2b-Sandbox-Port", "49999")
                .POST(HttpRequest.BodyPublishers.noBody())).statusCode()).isEqualTo(401);
        assertThat(stream(mine, "process.Process/Start", Map.of("process", Map.of("cmd", "/bin/true", "args",
                List.of(Map.of()))), Map.of())).as("an argument of another type").isEmpty();

        // malformed and oversized envelopes: a stream's error is its end-of-stream envelope (the SDKs read no other)
        assertThat(streamError(mine, new byte[] {0, 0, 0})).isEqualTo("invalid_argument");
        assertThat(streamError(mine, new byte[] {0, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}))
                .isEqualTo("resource_exhausted");
        assertThat(streamError(mine, envelope(0, "[1]".getBytes()))).isEqualTo("invalid_argument");
        assertThat(streamError(mine, envelope(1, "{}".getBytes()))).isEqualTo("unimplemented");
        assertThat(streamError(mine, envelope(0, JSON.writeValueAsBytes(Map.of("process", Map.of("pid", 999_999))))))
                .as("a Start without a command").isEqualTo("invalid_argument");
        HttpResponse<String> climbed = send(envd(mine, "/files?path=..%2F..%2F..%2F..%2Froot%2F.bashrc", "49983").GET());
        assertThat(climbed.statusCode()).as("the session's own /root, never the host's").isIn(403, 404);
        assertThat(send(control("/sandboxes/" + theirId, OTHER_KEY).DELETE()).statusCode()).isEqualTo(204);
        assertThat(send(control("/sandboxes/" + mine.get("sandboxID").asString(), KEY).DELETE()).statusCode())
                .isEqualTo(204);
    }
}
