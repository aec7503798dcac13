package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.testhost.Capability;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10, class 5: a web page cannot drive a token-less server through a visitor's browser — neither by DNS
 * rebinding (a foreign Host), nor by a cross-site request (a foreign Origin), nor by a "simple" cross-site POST that
 * needs no preflight (text/plain, a form, an empty body). Issue 25, item 7: a page on another port of this machine is
 * another site, the operator's own pages can be listed, and a request with no Host at all (a balancer's default health
 * check) is no browser's. Raw HTTP over a socket, so that Host is what a browser sends.
 */
class BrowserGuardTest {
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));
    /** A server whose operator lists the origins of pages of their own. */
    @RegisterExtension
    static final TestServer LISTING = TestServer.with(c -> c.withPool(Map.of()).withAllowedOrigins(
            List.of("https://app.example.com", "HTTP://LocalHost:3000")));

    record Answer(int status, String body) {}

    static Answer raw(String method, String path, Map<String, String> headers, String body) throws Exception {
        StringBuilder head = new StringBuilder(method + " " + path + " HTTP/1.1\r\n");
        headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
        byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        head.append("Content-Length: ").append(bytes.length).append("\r\nConnection: close\r\n\r\n");
        return exchange(SERVER.server().port(), head.toString(), bytes);
    }

    /** Sends {@code head} (request line and headers, as given) and {@code body} to {@code port}; the answer. */
    static Answer exchange(int port, String head, byte[] body) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(30_000);
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            in.transferTo(answer);
            String text = answer.toString(StandardCharsets.UTF_8);
            int status = Integer.parseInt(text.substring(9, 12));
            return new Answer(status, text.substring(text.indexOf("\r\n\r\n") + 4));
        }
    }

    /** A JSON POST of {@code body} to {@code port} with {@code Origin: origin}, as a browser would send it. */
    static Answer fromOrigin(int port, String path, String origin, String body) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        return exchange(port, "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nOrigin: " + origin
                + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n", bytes);
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
                "Origin", "http://localhost:" + SERVER.server().port()), RUN);
        assertThat(own.status()).isEqualTo(200);
    }

    @Test
    void aPageOnAnotherPortOfThisMachineIsAnotherSiteAndOnlyTheServersOwnOriginsAreWelcome() throws Exception {
        int port = SERVER.server().port();
        int other = port == 9999 ? 9998 : 9999;
        for (String origin : new String[] {"http://127.0.0.1:" + other, "http://localhost:3000", "http://[::1]:"
                + (port + 1), "http://localhost", "https://127.0.0.1:" + port, "http://127.0.0.1:" + port + "/x",
                "http://user@127.0.0.1:" + port}) {
            for (String path : new String[] {"/v1/execute", "/mcp"}) {
                Answer a = fromOrigin(port, path, origin, path.equals("/mcp") ? McpTest.INITIALIZE : RUN);
                assertThat(a.status()).as(origin + " on " + path).isEqualTo(403);
                assertThat(a.body()).as(origin + " on " + path).contains("forbidden_origin");
            }
        }
        for (String origin : new String[] {"http://127.0.0.1:" + port, "http://localhost:" + port,
                "http://LOCALHOST:" + port, "http://[::1]:" + port}) {
            Answer run = fromOrigin(port, "/v1/execute", origin, RUN);
            assertThat(run.status()).as(origin).isEqualTo(200);
            assertThat(run.body()).as(origin).contains("\"stdout\":\"42\\n\"");
            assertThat(fromOrigin(port, "/mcp", origin, McpTest.INITIALIZE).status()).as(origin + " on /mcp")
                    .isEqualTo(200);
        }
    }

    @Test
    void theOriginsTheOperatorListsAreWelcomeAndNoOthers() throws Exception {
        int port = LISTING.server().port();
        for (String origin : new String[] {"https://app.example.com", "https://app.example.com:443",
                "https://APP.example.com", "http://localhost:3000", "http://127.0.0.1:" + port}) {
            for (String path : new String[] {"/v1/execute", "/mcp"}) {
                Answer a = fromOrigin(port, path, origin, path.equals("/mcp") ? McpTest.INITIALIZE : RUN);
                assertThat(a.status()).as(origin + " on " + path + ": " + a.body()).isEqualTo(200);
            }
        }
        for (String origin : new String[] {"http://app.example.com", "https://app.example.com:8443",
                "https://app.example.com.attacker.example", "https://attacker.example", "http://localhost:3001",
                "http://127.0.0.1:3000", "null"}) {
            for (String path : new String[] {"/v1/execute", "/mcp"}) {
                Answer a = fromOrigin(port, path, origin, path.equals("/mcp") ? McpTest.INITIALIZE : RUN);
                assertThat(a.status()).as(origin + " on " + path).isEqualTo(403);
            }
        }
    }

    @Test
    void aRequestWithoutAnyHostComesFromNoBrowserAndIsServedAsABalancersHealthCheckSendsIt() throws Exception {
        int port = SERVER.server().port();
        // exactly what HAProxy's default "option httpchk GET /healthz" sends
        Answer check = exchange(port, "GET /healthz HTTP/1.0\r\n\r\n", new byte[0]);
        assertThat(check.status()).as(check.body()).isEqualTo(200);
        assertThat(check.body()).contains("\"status\":\"ok\"");
        byte[] run = RUN.getBytes(StandardCharsets.UTF_8);
        Answer executed = exchange(port, "POST /v1/execute HTTP/1.0\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + run.length + "\r\n\r\n", run);
        assertThat(executed.status()).as(executed.body()).isEqualTo(200);
        assertThat(executed.body()).contains("\"stdout\":\"42\\n\"");
        // but an empty Host is refused (by Jetty: 400), a foreign one is a page's whatever the protocol version, and an
        // Origin is still checked
        for (String head : new String[] {"GET /healthz HTTP/1.0\r\nHost: \r\n\r\n",
                "GET /healthz HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n",
                "GET /healthz HTTP/1.0\r\nHost: attacker.example\r\n\r\n"}) {
            Answer a = exchange(port, head, new byte[0]);
            assertThat(a.status()).as(head).isIn(400, 403);
            assertThat(a.body()).as(head).doesNotContain("\"status\":\"ok\"");
        }
        Answer foreign = exchange(port, "GET /healthz HTTP/1.0\r\nHost: attacker.example\r\n\r\n", new byte[0]);
        assertThat(foreign.body()).contains("forbidden_host");
        Answer cross = exchange(port, "GET /healthz HTTP/1.0\r\nOrigin: http://attacker.example\r\n\r\n",
                new byte[0]);
        assertThat(cross.status()).isEqualTo(403);
        assertThat(cross.body()).contains("forbidden_origin");
    }

    /**
     * HAProxy's default HTTP check ({@code option httpchk GET /healthz}: HTTP/1.0, no Host) marks this server UP: the
     * verdict of its first completed check, read from HAProxy's own stats.
     */
    @Test
    void aBalancersDefaultHealthCheckMarksTheServerUp(@TempDir Path dir) throws Exception {
        Capability.HAPROXY.require();
        Path socket = dir.resolve("stats.sock");
        Path cfg = Files.writeString(dir.resolve("haproxy.cfg"), """
                global
                    stats socket %s mode 600
                defaults
                    mode http
                    timeout connect 2s
                    timeout client 10s
                    timeout server 10s
                backend replicas
                    option httpchk GET /healthz
                    server r0 127.0.0.1:%d check inter 200ms rise 1 fall 1
                """.formatted(socket, SERVER.server().port()));
        Process haproxy = new ProcessBuilder("/usr/sbin/haproxy", "-db", "-f", cfg.toString()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("haproxy.log").toFile()).start();
        try {
            Map<String, String> server = await("HAProxy's first completed check of the server")
                    .atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(50)).until(() -> {
                        if (!haproxy.isAlive()) {
                            throw new AssertionError("haproxy ended: " + Files.readString(dir.resolve("haproxy.log")));
                        }
                        return Files.exists(socket) ? stats(socket, "r0") : null;
                    }, view -> view != null && view.get("check_status").startsWith("L"));
            assertThat(server).as("HAProxy's view of the server").isNotNull();
            assertThat(server.get("check_status")).as(server.toString()).isEqualTo("L7OK");
            assertThat(server.get("check_code")).isEqualTo("200");
            assertThat(server.get("status")).isEqualTo("UP");
        } finally {
            haproxy.destroy();
            haproxy.waitFor();
        }
    }

    /** Server {@code name}'s row of HAProxy's {@code show stat} (column name to value), "* " of a running check cut. */
    static Map<String, String> stats(Path socket, String name) throws Exception {
        String csv;
        try (SocketChannel channel = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            channel.write(ByteBuffer.wrap("show stat\n".getBytes(StandardCharsets.US_ASCII)));
            csv = new String(Channels.newInputStream(channel).readAllBytes(), StandardCharsets.UTF_8);
        }
        List<String> lines = csv.lines().toList();
        String[] columns = lines.get(0).replaceFirst("^# ", "").split(",", -1);
        for (String line : lines.subList(1, lines.size())) {
            String[] values = line.split(",", -1);
            if (values.length > 1 && values[1].equals(name)) {
                Map<String, String> row = new HashMap<>();
                for (int i = 0; i < Math.min(columns.length, values.length); i++) {
                    row.put(columns[i], values[i].replaceFirst("^\\* ", ""));
                }
                return row;
            }
        }
        return null;
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
