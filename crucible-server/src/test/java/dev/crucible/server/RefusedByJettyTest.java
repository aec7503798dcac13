package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A request Jetty refuses before any route sees it still gets the API's JSON error, never Jetty's HTML page, and is
 * told the connection ends ({@code Connection: close}): a keep-alive client then opens a new one for its next
 * request instead of losing it on the closed socket.
 */
class RefusedByJettyTest {
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));
    static final JsonMapper JSON = JsonMapper.builder().build();


    /** The raw answer to {@code head} (request line and headers, without the blank line) and a one-byte body. */
    static String raw(String head) throws Exception {
        try (Socket s = new Socket("127.0.0.1", SERVER.server().port())) {
            s.setSoTimeout(30_000);
            s.getOutputStream().write((head + "\r\nContent-Length: 1\r\n\r\nx").getBytes(StandardCharsets.ISO_8859_1));
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            s.getInputStream().transferTo(answer); // ends: the server closes
            return answer.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void whatJettyRefusesIsAnsweredInJsonAndTheConnectionIsDeclaredClosed() throws Exception {
        Map<String, String> requests = Map.of(
                "a NUL in the path", "PUT /v1/sessions/x/files/a%00b HTTP/1.1\r\nHost: 127.0.0.1",
                "a broken escape", "GET /v1/runtimes%zz HTTP/1.1\r\nHost: 127.0.0.1",
                "a header without a colon", "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here",
                "headers over Jetty's limit", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + "a".repeat(64 * 1024));
        requests.forEach((what, head) -> {
            try {
                String answer = raw(head);
                String headers = answer.substring(0, answer.indexOf("\r\n\r\n")).toLowerCase();
                int status = Integer.parseInt(answer.substring(9, 12));
                assertThat(status).as(what).isBetween(400, 499);
                assertThat(headers).as(what).contains("content-type: application/json").contains("connection: close");
                JsonNode error = JSON.readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4)).path("error");
                assertThat(error.path("code").asString()).as(what).isIn("invalid_request", "headers_too_large",
                        "uri_too_long");
                assertThat(error.path("message").asString()).as(what).contains("refused before it reached Crucible");
            } catch (Exception e) {
                throw new AssertionError(what, e);
            }
        });
    }

    @Test
    void aKeepAliveClientGoesOnAfterARefusedRequest() throws Exception {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        String base = "http://127.0.0.1:" + SERVER.server().port();
        for (int i = 0; i < 20; i++) {
            HttpResponse<String> refused = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/sessions/x/files/a%00b"))
                    .PUT(HttpRequest.BodyPublishers.ofString("x")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(refused.statusCode()).isEqualTo(400);
            HttpResponse<String> next = client.send(HttpRequest.newBuilder(URI.create(base + "/healthz")).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(next.statusCode()).isEqualTo(200);
        }
    }
}
