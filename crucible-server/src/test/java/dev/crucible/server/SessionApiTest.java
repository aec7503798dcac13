package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The session routes over HTTP, with two tokens, against the real server and sandbox. */
class SessionApiTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static CrucibleServer server;
    static Http alice;
    static Http bob;
    static Path data;

    @BeforeAll
    static void start() {
        ServerConfig config = Http.config();
        data = config.sessions().dataDir();
        server = CrucibleServer.start(config.withPort(0).withTokens(Set.of("token-alice", "token-bob"))
                .withPool(Map.of()).withSessions(config.sessions().withMaxSessions(20, 3)), TestHost.crucible());
        alice = Http.to(server, "token-alice");
        bob = Http.to(server, "token-bob");
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    static String create(Http who, String body) throws Exception {
        HttpResponse<String> r = who.postJson("/v1/sessions", body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return json(r).get("id").asString();
    }

    static JsonNode cell(Http who, String id, String code) throws Exception {
        HttpResponse<String> r = who.postJson("/v1/sessions/" + id + "/execute",
                JSON.writeValueAsString(Map.of("code", code)));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return json(r);
    }

    static String error(HttpResponse<String> r) {
        return json(r).get("error").get("code").asString();
    }

    @Test
    void aBashSessionKeepsItsShellBetweenCellsAndAnExitStartsAFreshOne() throws Exception {
        String id = create(alice, "{\"language\": \"bash\"}");
        JsonNode first = cell(alice, id, "mkdir -p sub && cd sub && X=42 && f() { echo \"in $(pwd)\"; }\necho hi >&2");
        assertThat(first.get("status").asString()).isEqualTo("ok");
        assertThat(first.get("stderr").asString()).isEqualTo("hi\n");
        JsonNode second = cell(alice, id, "f; echo \"X=$X\"");
        assertThat(second.get("stdout").asString()).isEqualTo("in /workspace/sub\nX=42\n");
        JsonNode failed = cell(alice, id, "ls /nonexistent");
        assertThat(failed.get("status").asString()).isEqualTo("runtime_error");
        assertThat(failed.get("result").asString()).isEqualTo("2");
        assertThat(cell(alice, id, "if then").get("status").asString()).as("a syntax error is the cell's")
                .isEqualTo("runtime_error");
        assertThat(cell(alice, id, "echo $X").get("stdout").asString()).isEqualTo("42\n");
        JsonNode exited = cell(alice, id, "echo bye; exit 3");
        assertThat(exited.get("status").asString()).as(exited.toString()).isNotEqualTo("ok");
        JsonNode fresh = cell(alice, id, "pwd; echo \"X=$X\"");
        assertThat(fresh.get("stdout").asString()).as(fresh.toString()).isEqualTo("/workspace\nX=\n");
        assertThat(fresh.get("restarted").asBoolean()).isTrue();
        assertThat(alice.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
    }

    @Test
    void aSessionKeepsStateAndFilesOverHttp() throws Exception {
        String id = create(alice, "{\"language\": \"python\"}");
        try {
            JsonNode info = json(alice.get("/v1/sessions/" + id));
            assertThat(info.get("language").asString()).isEqualTo("python");
            assertThat(info.get("state").asString()).isEqualTo("running");
            assertThat(info.has("created_at") && info.has("expires_at")).isTrue();
            cell(alice, id, "x = 41");
            JsonNode r = cell(alice, id, "print('hi')\nx + 1");
            assertThat(r.get("status").asString()).isEqualTo("ok");
            assertThat(r.get("stdout").asString()).isEqualTo("hi\n");
            assertThat(r.get("result").asString()).isEqualTo("42");
            JsonNode single = json(alice.postJson("/v1/sessions/" + id + "/execute",
                    "{\"code\": \"x\", \"mode\": \"single\"}"));
            assertThat(single.get("result").asString()).isEqualTo("41");
            assertThat(json(alice.postJson("/v1/sessions/" + id + "/execute", "{\"code\": \"if x:\"}"))
                    .get("status").asString()).isEqualTo("incomplete");

            byte[] binary = new byte[70_000];
            new Random(3).nextBytes(binary);
            HttpResponse<String> put = alice.put("/v1/sessions/" + id + "/files/in/data.bin", binary);
            assertThat(put.statusCode()).isEqualTo(201);
            // the fields in the order the docs show them, in every JVM (Map.of's order is salted per JVM)
            assertThat(put.body()).isEqualTo("{\"path\":\"in/data.bin\",\"size\":70000}");
            assertThat(cell(alice, id, "len(open('/workspace/in/data.bin', 'rb').read())").get("result").asString())
                    .isEqualTo("70000");
            HttpResponse<byte[]> back = alice.bytes("/v1/sessions/" + id + "/files/in/data.bin");
            assertThat(back.statusCode()).isEqualTo(200);
            assertThat(back.body()).isEqualTo(binary);
            cell(alice, id, "open('out.txt', 'w').write('made in the session')");
            assertThat(new String(alice.bytes("/v1/sessions/" + id + "/files/out.txt").body(), StandardCharsets.UTF_8))
                    .isEqualTo("made in the session");
            JsonNode listing = json(alice.get("/v1/sessions/" + id + "/files"));
            assertThat(listing.get("files").findValuesAsString("path")).containsExactly("in", "out.txt");
            assertThat(json(alice.get("/v1/sessions/" + id + "/files?dir=in")).get("files").get(0).get("size").asLong())
                    .isEqualTo(70000);
            assertThat(alice.get("/v1/sessions/" + id + "/files?dir=in").body())
                    .startsWith("{\"dir\":\"in\",\"files\":[{\"path\":\"in/data.bin\",\"type\":\"file\",\"size\":70000,");
            HttpResponse<String> deleted = alice.delete("/v1/sessions/" + id + "/files/in");
            assertThat(deleted.statusCode()).isEqualTo(200);
            assertThat(deleted.body()).isEqualTo("{\"path\":\"in\",\"deleted\":true}");
            assertThat(alice.bytes("/v1/sessions/" + id + "/files/in/data.bin").statusCode()).isEqualTo(404);

            // another token's session does not exist for bob, in any route
            assertThat(error(bob.get("/v1/sessions/" + id))).isEqualTo("session_not_found");
            assertThat(bob.postJson("/v1/sessions/" + id + "/execute", "{\"code\": \"x\"}").statusCode()).isEqualTo(404);
            assertThat(bob.get("/v1/sessions/" + id + "/files/out.txt").statusCode()).isEqualTo(404);
            assertThat(bob.put("/v1/sessions/" + id + "/files/evil.txt", new byte[1]).statusCode()).isEqualTo(404);
            assertThat(bob.delete("/v1/sessions/" + id).statusCode()).isEqualTo(404);
            assertThat(json(bob.get("/v1/sessions")).get("sessions").size()).isZero();
            assertThat(json(alice.get("/v1/sessions")).get("sessions").findValuesAsString("id")).contains(id);
        } finally {
            assertThat(alice.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        }
        assertThat(error(alice.get("/v1/sessions/" + id))).isEqualTo("session_not_found");
        assertThat(data.resolve("sessions").resolve(id)).doesNotExist();
    }

    /** A session's file is downloaded, never rendered on the API's origin: attachment, nosniff, a sandbox CSP. */
    @Test
    void aDownloadIsAnAttachmentABrowserNeverRendersOrSniffs() throws Exception {
        String id = create(alice, "{\"language\": \"python\"}");
        try {
            byte[] page = "<script>sessionStorage.clear()</script>".getBytes(StandardCharsets.UTF_8);
            String name = "r%C3%A9sum%C3%A9%22%3B%20x.html"; // résumé"; x.html
            assertThat(alice.put("/v1/sessions/" + id + "/files/" + name, page).statusCode()).isEqualTo(201);
            for (String route : new String[] {"/files/" + name, "/files?path=%2Fworkspace%2F" + name}) {
                HttpResponse<byte[]> r = alice.bytes("/v1/sessions/" + id + route);
                assertThat(r.statusCode()).as(route).isEqualTo(200);
                assertThat(r.body()).isEqualTo(page);
                assertThat(r.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
                assertThat(r.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
                assertThat(r.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(csp ->
                        assertThat(csp).startsWith("sandbox"));
                assertThat(r.headers().firstValue("Content-Disposition")).hasValue(
                        "attachment; filename=\"r_sum____x.html\"; filename*=UTF-8''r%C3%A9sum%C3%A9%22%3B%20x.html");
            }
        } finally {
            assertThat(alice.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void badInputGetsTheRightErrorAndWritesNothing() throws Exception {
        assertThat(alice.postJson("/v1/sessions/" + "f".repeat(32) + "/execute", "{\"code\": \"1\"}").statusCode())
                .isEqualTo(404);
        assertThat(alice.get("/v1/sessions/not-an-id").statusCode()).isEqualTo(404);
        assertThat(error(alice.postJson("/v1/sessions", "{\"language\": \"cobol\"}"))).isEqualTo("unknown_language");
        assertThat(alice.postJson("/v1/sessions", "{\"limits\": {\"memory_mb\": 1}}").statusCode()).isEqualTo(422);
        String id = create(alice, "{}");
        try {
            HttpResponse<String> big = alice.postJson("/v1/sessions/" + id + "/execute",
                    JSON.writeValueAsString(Map.of("code", "x = '" + "a".repeat(1024 * 1024) + "'")));
            assertThat(big.statusCode()).isEqualTo(413);
            assertThat(error(big)).isEqualTo("cell_too_large");
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/execute", "{\"code\": "))).isEqualTo("invalid_json");
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/execute", "{}"))).isEqualTo("invalid_request");
            // the api cases of hostile-cases.json: files-upload-path-traversal, -absolute-path, -weird-names
            for (String path : List.of("../../etc/cron.d/evil", "/etc/passwd", "a\u0000b", "..", "a/../../b",
                    "a\\..\\b", "x/", "\u202etxt.exe", "a".repeat(4096))) {
                String encoded = URLEncoder.encode(path, StandardCharsets.UTF_8).replace("+", "%20");
                HttpResponse<String> r = alice.put("/v1/sessions/" + id + "/files/" + encoded, "x".getBytes());
                assertThat(r.statusCode()).as(path + ": " + r.body()).isEqualTo(400);
            }
            assertThat(json(alice.get("/v1/sessions/" + id + "/files")).get("files").size()).isZero();
            assertThat(Path.of("/etc/cron.d/evil")).doesNotExist();
            // with Expect: 100-continue, as a careful client sends a large body: the 413 comes before the body, so
            // the server's close of an unread 33 MiB cannot reset the connection under the answer
            HttpResponse<String> huge = alice.send(HttpRequest.newBuilder(
                            URI.create(alice.base() + "/v1/sessions/" + id + "/files/huge.bin"))
                    .expectContinue(true).PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[33 * 1024 * 1024])));
            assertThat(huge.statusCode()).isEqualTo(413);
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }

    @Test
    void interruptRestartAndTheSessionCap() throws Exception {
        String id = create(alice, "{\"language\": \"python\", \"limits\": {\"timeout_ms\": 60000}}");
        try {
            cell(alice, id, "y = 'kept'");
            CompletableFuture<JsonNode> running = CompletableFuture.supplyAsync(() -> {
                try {
                    return cell(alice, id, "import time\nwhile True:\n    time.sleep(0.01)");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            boolean interrupted = await("a running cell to interrupt").atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> json(alice.postJson("/v1/sessions/" + id + "/interrupt", "{}")).get("interrupted")
                            .asBoolean(), done -> done);
            assertThat(interrupted).isTrue();
            assertThat(running.get().get("status").asString()).isEqualTo("interrupted");
            assertThat(cell(alice, id, "y").get("result").asString()).isEqualTo("'kept'");
            assertThat(alice.postJson("/v1/sessions/" + id + "/restart", "{}").statusCode()).isEqualTo(200);
            assertThat(cell(alice, id, "'y' in globals()").get("result").asString()).isEqualTo("False");

            String two = create(alice, "{}");
            String three = create(alice, "{\"language\": \"javascript\"}");
            HttpResponse<String> fourth = alice.postJson("/v1/sessions", "{}");
            assertThat(fourth.statusCode()).isEqualTo(429);
            assertThat(error(fourth)).isEqualTo("too_many_sessions");
            assertThat(fourth.headers().firstValue("Retry-After")).isPresent();
            String bobs = create(bob, "{}"); // the cap is per token
            bob.delete("/v1/sessions/" + bobs);
            alice.delete("/v1/sessions/" + two);
            alice.delete("/v1/sessions/" + three);
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }
    @Test
    void aCommandRunsOverHttpAndBadOnesGetTheirError() throws Exception {
        String id = create(alice, "{\"language\": \"python\"}");
        try {
            HttpResponse<String> r = alice.postJson("/v1/sessions/" + id + "/commands",
                    "{\"command\": \"cat; echo \\\"$NAME\\\" >&2; exit 4\", \"stdin\": \"in\\n\", \"env\": {\"NAME\": \"v\"}}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode result = json(r);
            assertThat(result.get("exit_code").asInt()).isEqualTo(4);
            assertThat(result.get("stdout").asString()).isEqualTo("in\n");
            assertThat(result.get("stderr").asString()).isEqualTo("v\n");
            assertThat(result.get("timed_out").asBoolean()).isFalse();
            assertThat(result.get("signal").isNull()).isTrue();
            JsonNode timedOut = json(alice.postJson("/v1/sessions/" + id + "/commands",
                    "{\"argv\": [\"sleep\", \"30\"], \"timeout_ms\": 300}"));
            assertThat(timedOut.get("timed_out").asBoolean()).isTrue();
            assertThat(timedOut.get("signal").asInt()).isEqualTo(9);
            // refusals: each with its code, as JSON, the session untouched
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/commands", "{}"))).isEqualTo("invalid_request");
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/commands", "{\"argv\": []}")))
                    .isEqualTo("invalid_request");
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/commands", "{\"command\": \"true\","
                    + " \"cwd\": \"/nowhere\"}"))).isEqualTo("invalid_request");
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/commands", "{\"command\": \"true\","
                    + " \"timeout_ms\": -1}"))).isEqualTo("invalid_limits");
            assertThat(error(alice.postJson("/v1/sessions/" + id + "/commands", "{\"command\": \"true\", \"env\": [\"x\"]}")))
                    .isEqualTo("invalid_json");
            HttpResponse<String> other = bob.postJson("/v1/sessions/" + id + "/commands", "{\"command\": \"true\"}");
            assertThat(other.statusCode()).isEqualTo(404);
            assertThat(error(other)).isEqualTo("session_not_found");
            assertThat(cell(alice, id, "6 * 7").get("result").asString()).isEqualTo("42");
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }

    @Test
    void backgroundProcessesOverHttp() throws Exception {
        String id = create(alice, "{\"language\": \"python\"}");
        String base = "/v1/sessions/" + id;
        try {
            HttpResponse<String> started = alice.postJson(base + "/commands", "{\"command\": \"echo start; read x;"
                    + " echo got $x >&2; exit 3\", \"background\": true, \"stdin_open\": true}");
            assertThat(started.statusCode()).as(started.body()).isEqualTo(201);
            long pid = json(started).get("pid").asLong();
            assertThat(json(started).get("running").asBoolean()).isTrue();
            assertThat(json(alice.get(base + "/processes")).get("processes").findValuesAsString("pid"))
                    .contains(Long.toString(pid));
            JsonNode first = json(alice.get(base + "/processes/" + pid + "/output?wait_ms=5000"));
            for (int turns = 0; turns < 12 && first.get("next").asLong() < 6; turns++) {
                first = json(alice.get(base + "/processes/" + pid + "/output?wait_ms=5000"));
            }
            assertThat(first.get("stdout").asString()).isEqualTo("start\n");
            assertThat(first.get("ended").asBoolean()).isFalse();
            JsonNode wrote = json(alice.postJson(base + "/processes/" + pid + "/stdin", "{\"data\": \"hi\\n\","
                    + " \"close\": true}"));
            assertThat(wrote.get("written").asLong()).isEqualTo(3);
            // followed from the start as NDJSON: every chunk with its offset, then the ended process
            HttpResponse<String> followed = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + base
                    + "/processes/" + pid + "/output")).header("Accept", "application/x-ndjson").GET());
            assertThat(followed.statusCode()).isEqualTo(200);
            List<JsonNode> events = followed.body().lines().map(JSON::readTree).toList();
            assertThat(events).extracting(e -> e.get("type").asString()).containsExactly("stdout", "stderr", "result");
            assertThat(events.get(0).get("data").asString()).isEqualTo("start\n");
            assertThat(events.get(0).get("next").asLong()).isEqualTo(6);
            assertThat(events.get(1).get("next").asLong()).isEqualTo(13);
            assertThat(events.get(1).get("data").asString()).isEqualTo("got hi\n");
            assertThat(events.get(2).get("result").get("exit_code").asInt()).isEqualTo(3);
            assertThat(error(alice.postJson(base + "/processes/" + pid + "/stdin", "{\"data\": \"x\"}")))
                    .isEqualTo("stdin_closed");
            // a foreground command streamed
            HttpResponse<String> streamed = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + base
                    + "/commands")).header("Accept", "application/x-ndjson").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"echo a; echo b >&2\"}")));
            List<JsonNode> lines = streamed.body().lines().map(JSON::readTree).toList();
            assertThat(lines).extracting(e -> e.get("type").asString()).contains("stdout", "stderr").last()
                    .isEqualTo("result");
            assertThat(lines.getLast().get("result").get("stdout").asString()).isEqualTo("a\n");
            HttpResponse<String> badStream = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + base
                    + "/commands")).header("Accept", "application/x-ndjson").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"argv\": []}")));
            assertThat(badStream.statusCode()).as(badStream.body()).isEqualTo(400);
            assertThat(error(badStream)).isEqualTo("invalid_request");
            // a signal, by name, to the process group
            long sleeper = json(alice.postJson(base + "/commands", "{\"argv\": [\"sleep\", \"600\"],"
                    + " \"background\": true}")).get("pid").asLong();
            assertThat(json(alice.postJson(base + "/processes/" + sleeper + "/signal", "{\"signal\": \"KILL\"}"))
                    .get("signalled").asBoolean()).isTrue();
            JsonNode killed = json(alice.get(base + "/processes/" + sleeper + "/output?wait_ms=5000"));
            for (int turns = 0; turns < 12 && !killed.get("ended").asBoolean(); turns++) {
                killed = json(alice.get(base + "/processes/" + sleeper + "/output?wait_ms=5000&from="
                        + killed.get("next").asLong()));
            }
            assertThat(killed.get("process").get("signal").asInt()).isEqualTo(9);
            assertThat(json(alice.get(base)).get("processes").findValuesAsString("pid"))
                    .contains(Long.toString(pid), Long.toString(sleeper));
            // refusals, each with its code
            assertThat(error(alice.get(base + "/processes/99999"))).isEqualTo("process_not_found");
            assertThat(alice.get(base + "/processes/99999").statusCode()).isEqualTo(404);
            assertThat(error(alice.get(base + "/processes/abc"))).isEqualTo("invalid_request");
            assertThat(error(alice.get(base + "/processes/" + pid + "/output?from=-1"))).isEqualTo("invalid_request");
            assertThat(error(alice.postJson(base + "/processes/" + sleeper + "/signal", "{\"signal\": \"NOPE\"}")))
                    .isEqualTo("invalid_request");
            assertThat(error(bob.get(base + "/processes"))).isEqualTo("session_not_found");
            assertThat(error(alice.postJson(base + "/commands", "{\"command\": \"true\", \"stdin_open\": true}")))
                    .isEqualTo("invalid_request");
        } finally {
            alice.delete(base);
        }
    }

    /**
     * A client that asks for a command's output as a stream and then reads nothing holds back only its own stream:
     * the session's other commands still run (the output never waits for a client on the thread that reads the
     * session's supervisor).
     */
    @Test
    void aStreamNobodyReadsStallsNothingElseOfTheSession() throws Exception {
        String id = create(alice, "{\"language\": \"python\"}");
        String base = "/v1/sessions/" + id;
        try (Socket silent = new Socket("127.0.0.1", server.port())) {
            silent.setReceiveBufferSize(4096);
            String body = "{\"command\": \"head -c 200000000 /dev/zero\", \"timeout_ms\": 60000}";
            silent.getOutputStream().write(("POST " + base + "/commands HTTP/1.1\r\nHost: 127.0.0.1:" + server.port()
                    + "\r\nAuthorization: Bearer token-alice\r\nAccept: application/x-ndjson\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            silent.getOutputStream().flush();
            // never read: the server's writes to this client fill its buffers and block
            for (int i = 0; i < 3; i++) {
                HttpResponse<String> other = alice.postJson(base + "/commands", "{\"command\": \"echo still\"}");
                assertThat(other.statusCode()).as(other.body()).isEqualTo(200);
                assertThat(json(other).get("stdout").asString()).isEqualTo("still\n");
            }
        } finally {
            alice.delete(base);
        }
    }
}
