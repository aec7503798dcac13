package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A session's ports (issue 27 item 5) against the real server and sandbox: a server started in the session is reached
 * through {@code /v1/sessions/{id}/ports/{port}/…} with bodies both ways, chunked and streamed, and a WebSocket; what
 * must be refused is refused (another owner's session, a port outside the range, a port nothing listens on, a second
 * request smuggled behind the first); every answer is fenced into an opaque origin and sets no cookie.
 */
class PortsTest {
    static final int PORT = 8765;
    static CrucibleServer server;
    static Http alice;
    static Http bob;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of("token-alice", "token-bob"))
                .withPool(Map.of()), TestHost.crucible());
        alice = Http.to(server, "token-alice");
        bob = Http.to(server, "token-bob");
        id = startApp(alice, PORT);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** A Python session running the test's app (resources/ports/app.py) on {@code port}, once it listens. */
    static String startApp(Http http, int port) throws Exception {
        JsonNode session = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}"));
        String sid = session.get("id").asText();
        for (String file : new String[] {"app.py", "page.html", "page2.html"}) {
            try (InputStream in = PortsTest.class.getResourceAsStream("/ports/" + file)) {
                assertThat(http.put("/v1/sessions/" + sid + "/files/" + file, in.readAllBytes()).statusCode())
                        .isEqualTo(201);
            }
        }
        HttpResponse<String> started = http.postJson("/v1/sessions/" + sid + "/commands",
                "{\"argv\": [\"python3\", \"/workspace/app.py\", \"" + port + "\"], \"background\": true}");
        assertThat(started.statusCode()).as(started.body()).isEqualTo(201);
        await().atMost(Duration.ofSeconds(60)).until(() -> SessionApiTest.json(http.get("/v1/sessions/" + sid))
                .get("ports").toString().contains("\"port\":" + port));
        return sid;
    }

    private static String path(String rest) {
        return "/v1/sessions/" + id + "/ports/" + PORT + rest;
    }

    private static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    @Test
    void aServerInTheSessionAnswersThroughItsPortAndSeesNoneOfTheApisCredentials() throws Exception {
        HttpResponse<String> r = alice.get(path("/hello/there?x=1&y=%2F"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(SessionApiTest.json(r).get("path").asText()).isEqualTo("/hello/there?x=1&y=%2F");
        assertThat(r.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(csp ->
                assertThat(csp).startsWith("sandbox").doesNotContain("allow-same-origin"));
        assertThat(r.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");

        JsonNode seen = SessionApiTest.json(alice.get(path("/seen")));
        JsonNode hello = seen.get(seen.size() - 2).get("headers");
        assertThat(hello.get("Host").asText()).isEqualTo("localhost:" + PORT);
        assertThat(hello.has("Authorization")).as("the bearer token stays with the API").isFalse();
        assertThat(hello.get("X-Forwarded-Prefix").asText()).isEqualTo("/v1/sessions/" + id + "/ports/" + PORT);
        assertThat(hello.get("Connection").asText()).as("a GET without a body is kept alive").isEqualTo("keep-alive");

        HttpResponse<String> cookie = alice.get(path("/cookie"));
        assertThat(cookie.headers().allValues("Set-Cookie")).as("no cookie lands on the API's origin").isEmpty();
        assertThat(cookie.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();

        HttpResponse<String> bare = alice.get("/v1/sessions/" + id + "/ports/" + PORT);
        assertThat(bare.statusCode()).isEqualTo(302);
        assertThat(bare.headers().firstValue("Location")).hasValue("/v1/sessions/" + id + "/ports/" + PORT + "/");
        assertThat(SessionApiTest.json(alice.get("/v1/sessions/" + id + "/ports")).get("ports").toString())
                .contains("\"port\":" + PORT);
    }

    /** Fields that describe the answer pass; what would act on the API's origin (or on a browser) never does. */
    @Test
    void onTheApisOriginOnlyTheFieldsThatDescribeTheAnswerPass() throws Exception {
        HttpResponse<String> r = alice.get(path("/headers"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        Map<String, List<String>> got = r.headers().map();
        assertThat(r.headers().firstValue("Cache-Control")).hasValue("max-age=60");
        assertThat(r.headers().firstValue("ETag")).hasValue("\"v1\"");
        assertThat(r.headers().firstValue("Last-Modified")).hasValue("Wed, 21 Oct 2015 07:28:00 GMT");
        assertThat(r.headers().firstValue("Vary")).hasValue("Accept");
        assertThat(r.headers().firstValue("Location")).hasValue("/elsewhere");
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(r.headers().allValues("Content-Security-Policy")).as("only the fence").singleElement()
                .satisfies(csp -> assertThat(csp).startsWith("sandbox ").doesNotContain("script-src"));
        for (String dropped : new String[] {"clear-site-data", "service-worker-allowed", "set-cookie", "refresh",
                "link", "access-control-allow-origin", "access-control-allow-credentials", "permissions-policy",
                "strict-transport-security", "cross-origin-opener-policy", "origin-agent-cluster", "www-authenticate",
                "x-frame-options", "x-app", "content-security-policy-report-only"}) {
            assertThat(got).as(dropped).doesNotContainKey(dropped);
        }
    }

    @Test
    void theAppsOwnErrorsComeBackAsTheAppSentThem() throws Exception {
        for (int status : new int[] {404, 405, 500, 502}) {
            HttpResponse<String> r = alice.get(path("/status/" + status));
            assertThat(r.statusCode()).isEqualTo(status);
            assertThat(r.body()).as("no error of the API's written over the app's").isEqualTo("app says " + status);
            assertThat(r.headers().firstValue("Content-Type")).hasValue("text/plain");
            HttpResponse<String> empty = alice.get(path("/empty/" + status));
            assertThat(empty.statusCode()).isEqualTo(status);
            assertThat(empty.body()).as("an empty answer stays empty").isEmpty();
        }
    }

    @Test
    void largeBodiesGoBothWaysWhetherSizedChunkedOrStreamed() throws Exception {
        byte[] upload = new byte[12 << 20];
        new Random(7).nextBytes(upload);
        HttpResponse<String> sized = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + path("/up")))
                .POST(HttpRequest.BodyPublishers.ofByteArray(upload)));
        assertThat(sized.statusCode()).as(sized.body()).isEqualTo(200);
        assertThat(SessionApiTest.json(sized).get("sha256").asText()).isEqualTo(sha256(upload));
        HttpResponse<String> chunked = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + path("/up")))
                .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(upload))));
        assertThat(chunked.statusCode()).as(chunked.body()).isEqualTo(200);
        assertThat(SessionApiTest.json(chunked).get("length").asLong()).isEqualTo(upload.length);
        assertThat(SessionApiTest.json(chunked).get("sha256").asText()).isEqualTo(sha256(upload));

        int n = 20 << 20;
        HttpResponse<byte[]> down = alice.bytes(path("/stream?n=" + n));
        assertThat(down.statusCode()).isEqualTo(200);
        assertThat(down.body()).hasSize(n);
        assertThat(down.body()[n - 1]).isEqualTo((byte) ((n - 1) % 256));

        HttpResponse<String> head = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + path("/x")))
                .method("HEAD", HttpRequest.BodyPublishers.noBody()));
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();
    }

    @Test
    void aWebSocketIsRelayedToTheSessionsServer() throws Exception {
        CompletableFuture<String> echoed = new CompletableFuture<>();
        WebSocket socket = alice.client().newWebSocketBuilder().header("Authorization", "Bearer token-alice")
                .buildAsync(URI.create(alice.base().replace("http:", "ws:") + path("/ws")), new WebSocket.Listener() {
                    @Override
                    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                        echoed.complete(data.toString());
                        return null;
                    }
                }).get(30, TimeUnit.SECONDS);
        socket.sendText("through the port", true).get(30, TimeUnit.SECONDS);
        assertThat(echoed.get(30, TimeUnit.SECONDS)).isEqualTo("THROUGH THE PORT");
        socket.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(30, TimeUnit.SECONDS);
    }

    @Test
    void whatIsNotTheOwnersOrNotListeningIsRefused() throws Exception {
        assertThat(bob.get(path("/")).statusCode()).as("another owner's session").isEqualTo(404);
        assertThat(Http.to(server, null).get(path("/")).statusCode()).as("no token").isEqualTo(401);
        HttpResponse<String> zero = alice.get("/v1/sessions/" + id + "/ports/0/");
        assertThat(zero.statusCode()).isEqualTo(400);
        assertThat(alice.get("/v1/sessions/" + id + "/ports/70000/").statusCode()).isEqualTo(400);
        assertThat(alice.get("/v1/sessions/" + id + "/ports/http/").statusCode()).isEqualTo(400);
        HttpResponse<String> none = alice.get("/v1/sessions/" + id + "/ports/" + (PORT + 1) + "/");
        assertThat(none.statusCode()).isEqualTo(502);
        assertThat(none.body()).contains("port_not_listening");
        assertThat(alice.get("/v1/sessions/feedfacefeedfacefeedfacefeedface/ports/" + PORT + "/").statusCode())
                .isEqualTo(404);
    }

    @Test
    void aRequestSmuggledBehindAnotherNeverReachesTheSessionsServer() throws Exception {
        int before = SessionApiTest.json(alice.get(path("/seen"))).size();
        String smuggled = "GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n";
        String both = "POST " + path("/up") + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer token-alice\r\n"
                + "Content-Type: application/json\r\nContent-Length: " + smuggled.length()
                + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled;
        String pipelined = "GET " + path("/first") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer token-alice\r\n\r\n" + "GET " + path("/second-without-token")
                + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        for (String attack : new String[] {both, pipelined}) {
            try (Socket s = new Socket("127.0.0.1", server.port())) {
                s.setSoTimeout(30_000);
                s.getOutputStream().write(attack.getBytes(StandardCharsets.ISO_8859_1));
                s.getOutputStream().flush();
                s.getInputStream().readAllBytes();
            } catch (IOException e) {
                // the server may end the connection: what the session's server saw is what counts
            }
        }
        JsonNode seen = SessionApiTest.json(alice.get(path("/seen")));
        StringBuilder paths = new StringBuilder();
        for (int i = before; i < seen.size(); i++) {
            paths.append(seen.get(i).get("path").asText()).append(' ');
        }
        assertThat(paths.toString()).contains("/first").doesNotContain("smuggled").doesNotContain("second-without");
    }

    @Test
    void aSessionThatListensStillReachesNothingButItsOwnLoopback() throws Exception {
        String other = SessionApiTest.json(alice.postJson("/v1/sessions", "{\"language\": \"python\"}"))
                .get("id").asText();
        String probe = "import socket\n"
                + "for host, port in [('127.0.0.1', %d), ('127.0.0.1', %d), ('10.231.0.1', 80), ('1.1.1.1', 53)]:\n"
                + "    try:\n"
                + "        socket.create_connection((host, port), 3).close(); print(host, port, 'REACHED')\n"
                + "    except OSError as e:\n"
                + "        print(host, port, type(e).__name__, e.errno)\n";
        String code = String.format(probe, server.port(), PORT);
        HttpResponse<String> r = alice.postJson("/v1/sessions/" + other + "/commands",
                "{\"argv\": [\"python3\", \"-c\", " + JsonMapper.builder().build()
                        .writeValueAsString(code) + "]}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String out = SessionApiTest.json(r).get("stdout").asText();
        assertThat(out).as("the server's own port, another session's server, the network").doesNotContain("REACHED")
                .contains("127.0.0.1 " + server.port() + " ConnectionRefusedError")
                .contains("127.0.0.1 " + PORT + " ConnectionRefusedError");
        alice.delete("/v1/sessions/" + other);
    }
}
