package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 10, class 5: a web page cannot drive a token-less server through a visitor's browser — neither by DNS
 * rebinding (a foreign Host), nor by a cross-site request (a foreign Origin), nor by a "simple" cross-site POST that
 * needs no preflight (text/plain, a form, an empty body). Raw HTTP over a socket, so that Host is what a browser sends.
 */
class BrowserGuardTest {
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));


    record Answer(int status, String body) {}

    static Answer raw(String method, String path, Map<String, String> headers, String body) throws Exception {
        try (Socket s = new Socket("127.0.0.1", SERVER.server().port())) {
            s.setSoTimeout(30_000);
            byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
            StringBuilder request = new StringBuilder(method + " " + path + " HTTP/1.1\r\n");
            headers.forEach((k, v) -> request.append(k).append(": ").append(v).append("\r\n"));
            request.append("Content-Length: ").append(bytes.length).append("\r\nConnection: close\r\n\r\n");
            OutputStream out = s.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(bytes);
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            in.transferTo(answer);
            String text = answer.toString(StandardCharsets.UTF_8);
            int status = Integer.parseInt(text.substring(9, 12));
            return new Answer(status, text.substring(text.indexOf("\r\n\r\n") + 4));
        }
    }

    static final String RUN = "{\"language\": \"python\", \"code\": \"print(6 * 7)\"}";

    static Map<String, String> json(String host) {
        return Map.of("Host", host, "Content-Type", "application/json");
    }

    @Test
    void aForeignHostIsRefusedOnEveryRouteBeforeAnythingRuns() throws Exception {
        for (String host : new String[] {"attacker.example", "attacker.example:" + SERVER.server().port(), "localhost.",
                "127.0.0.1.nip.io", "0.0.0.0", "[::ffff:127.0.0.1]"}) {
            Answer a = raw("POST", "/v1/execute", json(host), RUN);
            assertThat(a.status()).as(host).isEqualTo(403);
            assertThat(a.body()).as(host).contains("\"code\":\"forbidden_host\"").doesNotContain("42");
        }
        for (String[] route : new String[][] {{"GET", "/v1/sessions"}, {"GET", "/v1/runtimes"},
                {"POST", "/run_code"}, {"POST", "/replit/eval"}, {"POST", "/api/v2/execute"}, {"POST", "/v1/sessions"},
                {"GET", "/metrics"}}) {
            Answer a = raw(route[0], route[1], json("rebound.attacker.example"), "{}");
            assertThat(a.status()).as(route[1]).isEqualTo(403);
        }
    }

    @Test
    void loopbackNamesWithAnyPortAreWelcome() throws Exception {
        for (String host : new String[] {"127.0.0.1:" + SERVER.server().port(), "localhost", "LOCALHOST:1", "[::1]:" + SERVER.server().port()}) {
            Answer a = raw("POST", "/v1/execute", json(host), RUN);
            assertThat(a.status()).as(host).isEqualTo(200);
            assertThat(a.body()).as(host).contains("\"stdout\":\"42\\n\"");
        }
    }

    @Test
    void aForeignOriginIsRefusedAndTheServersOwnIsNot() throws Exception {
        for (String origin : new String[] {"http://attacker.example", "null", "https://localhost.attacker.example",
                "file://", "chrome-extension://abc"}) {
            Answer a = raw("POST", "/v1/execute", Map.of("Host", "127.0.0.1", "Content-Type", "application/json",
                    "Origin", origin), RUN);
            assertThat(a.status()).as(origin).isEqualTo(403);
            assertThat(a.body()).contains("forbidden_origin");
        }
        Answer own = raw("POST", "/v1/execute", Map.of("Host", "127.0.0.1", "Content-Type", "application/json",
                "Origin", "http://localhost:3000"), RUN);
        assertThat(own.status()).isEqualTo(200);
    }

    @Test
    void aPostABrowserCouldSendCrossSiteWithoutAPreflightIsRefusedCompatRoutesIncluded() throws Exception {
        int before = sessions();
        for (String type : new String[] {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                "multipart/form-data; boundary=x", null}) {
            for (String path : new String[] {"/v1/execute", "/v1/sessions", "/v1/evaluate", "/v1/tools/call"}) {
                Map<String, String> headers = type == null ? Map.of("Host", "127.0.0.1")
                        : Map.of("Host", "127.0.0.1", "Content-Type", type);
                Answer a = raw("POST", path, headers, path.equals("/v1/sessions") && type == null ? null
                        : "{\"language\": \"python\", \"code\": \"print(42)\", \"version\": \"*\","
                                + " \"files\": [{\"content\": \"print(42)\"}]}");
                assertThat(a.status()).as(path + " as " + type).isEqualTo(415);
                assertThat(a.body()).doesNotContain("42\\n");
            }
        }
        // the compatible routes: what a browser sends cross-site (Sec-Fetch-Site, or an Origin) is refused ...
        for (String path : new String[] {"/run_code", "/replit/eval", "/api/v2/execute"}) {
            Answer a = raw("POST", path, Map.of("Host", "127.0.0.1", "Content-Type", "text/plain",
                    "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"), RUN);
            assertThat(a.status()).as(path).isEqualTo(415);
        }
        // ... while the Piston client from npm (node-fetch: a string body goes as text/plain, no Origin) still works
        Answer piston = raw("POST", "/api/v2/execute", Map.of("Host", "127.0.0.1", "Content-Type",
                "text/plain;charset=UTF-8"), "{\"language\": \"python\", \"version\": \"*\", \"files\": [{\"content\":"
                + " \"print(6 * 7)\"}]}");
        assertThat(piston.status()).as(piston.body()).isEqualTo(200);
        assertThat(piston.body()).contains("42");
        assertThat(sessions()).as("no session was created").isEqualTo(before);
        // what a program sends: JSON, or the custom header on a POST without a body
        Answer created = raw("POST", "/v1/sessions", Map.of("Host", "127.0.0.1", "X-Crucible-Request", "1"), null);
        assertThat(created.status()).as(created.body()).isEqualTo(201);
        String id = created.body().replaceAll(".*\"id\":\"([0-9a-f]+)\".*", "$1");
        assertThat(raw("DELETE", "/v1/sessions/" + id, Map.of("Host", "127.0.0.1"), null).status()).isEqualTo(200);
    }

    static int sessions() throws Exception {
        String body = raw("GET", "/v1/sessions", Map.of("Host", "127.0.0.1"), null).body();
        return body.split("\"id\"", -1).length - 1;
    }
}
