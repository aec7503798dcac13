package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.server.ports.PreviewTokens;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A listener of previews' own (issue 27 item 5): each session's port is an origin of its own,
 * {@code {port}-{hex}.localhost:{previewPort}}. A link sets a host-only cookie and drops its token; with the cookie the
 * session's server is reached unfenced (its cookies pass), and neither the cookie nor the token reaches it; the cookie
 * opens no other host, and no request there reaches an API route. Requests are written on raw sockets (the JDK client
 * cannot set {@code Host}); a real browser (headless Chromium) shows a page there has its own origin's storage and
 * server, and cannot read or drive the API. The server has no token at all.
 */
class PreviewListenerTest {
    static final int PORT = 8767;
    static ServerConfig config;
    static CrucibleServer server;
    static Http anyone;
    static String id;
    static String hex;

    @BeforeAll
    static void start() throws Exception {
        config = Http.config().withPort(0).withPool(Map.of()).withPreviewListen("127.0.0.1:0");
        server = CrucibleServer.start(config, TestHost.crucible());
        anyone = Http.to(server, null);
        id = PortsTest.startApp(anyone, PORT);
        hex = id.substring(id.lastIndexOf('.') + 1);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** An HTTP/1.1 answer as read off the socket; header names in lower case. */
    record Answer(int status, Map<String, List<String>> headers, String body) {
        String header(String name) {
            List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
            return values == null ? null : values.getFirst();
        }
    }

    private static String host(int port, String sessionHex) {
        return port + "-" + sessionHex + ".localhost:" + server.previewPort();
    }

    /** The token of a fresh link to {@link #PORT}, checking the link's form. */
    private static String link() throws Exception {
        JsonNode answer = SessionApiTest.json(anyone.postJson("/v1/sessions/" + id + "/previews",
                "{\"port\": " + PORT + "}"));
        assertThat(answer.get("host").asText()).isEqualTo(host(PORT, hex));
        String url = answer.get("url").asText();
        String prefix = "http://" + host(PORT, hex) + "/?crucible_preview=";
        assertThat(url).startsWith(prefix);
        return url.substring(prefix.length());
    }

    private static Answer request(String method, String host, String target, String cookie, String body)
            throws IOException {
        return request(method, host, target, cookie, body, Map.of());
    }

    private static Answer request(String method, String host, String target, String cookie, String body,
            Map<String, String> fields) throws IOException {
        try (Socket s = new Socket("127.0.0.1", server.previewPort())) {
            s.setSoTimeout(60_000);
            String head = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
                    + (cookie == null || cookie.isEmpty() ? "" : "Cookie: " + cookie + "\r\n")
                    + fields.entrySet().stream().map(f -> f.getKey() + ": " + f.getValue() + "\r\n")
                            .collect(Collectors.joining())
                    + (body == null ? "" : "Content-Type: text/plain\r\nContent-Length: " + body.length() + "\r\n")
                    + "\r\n" + (body == null ? "" : body);
            s.getOutputStream().write(head.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            return parse(s.getInputStream());
        }
    }

    private static Answer get(String host, String target, String cookie) throws IOException {
        return request("GET", host, target, cookie, null);
    }

    /** A GET carrying an E2B sandbox's {@code trafficAccessToken}, as {@code getHost(port)}'s users send it. */
    private static Answer traffic(String host, String target, String token) throws IOException {
        return request("GET", host, target, "", null, Map.of("e2b-traffic-access-token", token));
    }

    /** A browser's navigation to {@code target} ({@code Sec-Fetch-Mode: navigate}), with no cookie. */
    private static Answer navigate(String host, String target) throws IOException {
        return request("GET", host, target, null, null, Map.of("Sec-Fetch-Mode", "navigate"));
    }

    private static Answer parse(InputStream in) throws IOException {
        String[] lines = readHead(in).split("\r\n");
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.computeIfAbsent(lines[i].substring(0, colon).strip().toLowerCase(Locale.ROOT),
                    k -> new ArrayList<>()).add(lines[i].substring(colon + 1).strip());
        }
        byte[] rest = in.readAllBytes();
        if ("chunked".equalsIgnoreCase(headers.getOrDefault("transfer-encoding", List.of("")).getFirst())) {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            int at = 0;
            while (true) {
                int eol = new String(rest, at, rest.length - at, StandardCharsets.ISO_8859_1).indexOf("\r\n") + at;
                int size = Integer.parseInt(new String(rest, at, eol - at, StandardCharsets.ISO_8859_1).split(";")[0]
                        .strip(), 16);
                if (size == 0) {
                    break;
                }
                body.write(rest, eol + 2, size);
                at = eol + 2 + size + 2;
            }
            rest = body.toByteArray();
        }
        return new Answer(Integer.parseInt(lines[0].split(" ")[1]), headers, new String(rest, StandardCharsets.UTF_8));
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (head.length() < 4 || !head.substring(head.length() - 4).equals("\r\n\r\n")) {
            int b = in.read();
            assertThat(b).as("an answer's head, so far: " + head).isNotNegative();
            head.append((char) b);
        }
        return head.substring(0, head.length() - 4);
    }

    @Test
    void aLinkSetsAHostOnlyCookieAndRedirectsToItsPathWithoutTheToken() throws Exception {
        String token = link();
        Answer r = navigate(host(PORT, hex), "/a/b?x=1&crucible_preview=" + token + "&y=%2F");
        assertThat(r.status()).as(r.body()).isEqualTo(302);
        assertThat(r.header("Location")).isEqualTo("/a/b?x=1&y=%2F");
        assertThat(r.headers().get("set-cookie")).containsExactly(
                "crucible_preview=" + token + "; HttpOnly; SameSite=Lax; Path=/");
        assertThat(r.header("Cache-Control")).isEqualTo("no-store");

        Answer bare = navigate(host(PORT, hex), "/?crucible_preview=" + token);
        assertThat(bare.header("Location")).isEqualTo("/");
        Answer hostile = navigate(host(PORT, hex), "//evil.example/?crucible_preview=" + token);
        assertThat(hostile.header("Location")).as("never another host").isEqualTo("/.//evil.example/");

        Answer direct = get(host(PORT, hex), "/hello?crucible_preview=" + token + "&q=1", null);
        assertThat(direct.status()).as("a client that is no browser is answered at once: " + direct.body())
                .isEqualTo(200);
        assertThat(direct.body()).contains("\"path\": \"/hello?q=1\"").doesNotContain(token);
        assertThat(direct.headers().get("set-cookie")).contains(
                "crucible_preview=" + token + "; HttpOnly; SameSite=Lax; Path=/");
    }

    /**
     * Nothing a session serves is answered on the API's origin when previews have one of their own: the link route
     * there only redirects to the preview's origin, every method and path, and a bad link is refused before that.
     */
    @Test
    void theLinkRouteOnTheApisOriginOnlyRedirectsToThePreviewsOwnOrigin() throws Exception {
        String token = link();
        for (String method : List.of("GET", "POST", "DELETE")) {
            HttpResponse<String> r = anyone.send(HttpRequest.newBuilder(URI.create(anyone.base()
                    + "/v1/previews/" + token + "/kept/x?a=1&b=%2F"))
                    .method(method, HttpRequest.BodyPublishers.ofString("body")));
            assertThat(r.statusCode()).as(method + " " + r.body()).isEqualTo(307);
            assertThat(r.headers().firstValue("Location")).hasValue("http://" + host(PORT, hex)
                    + "/kept/x?a=1&b=%2F&crucible_preview=" + token);
            assertThat(r.body()).as("not one byte of the session's").doesNotContain("\"path\"");
        }
        assertThat(anyone.get("/v1/previews/" + token).headers().firstValue("Location"))
                .hasValue("http://" + host(PORT, hex) + "/?crucible_preview=" + token);
        assertThat(anyone.get("/v1/previews/" + token.substring(1) + "/kept").statusCode()).isEqualTo(403);
        Answer followed = get(host(PORT, hex), "/kept/x?a=1&crucible_preview=" + token, null);
        assertThat(followed.status()).isEqualTo(200);
        assertThat(followed.body()).contains("\"path\": \"/kept/x?a=1\"");
    }

    @Test
    void withTheCookieTheSessionsServerAnswersUnfencedAndSeesNeitherCookieNorToken() throws Exception {
        String cookie = "crucible_preview=" + link() + "; app=2";
        Answer page = get(host(PORT, hex), "/hello/there?q=1", cookie);
        assertThat(page.status()).as(page.body()).isEqualTo(200);
        assertThat(page.body()).contains("\"path\": \"/hello/there?q=1\"");
        assertThat(page.header("Content-Security-Policy")).as("an origin of its own is not fenced in").isNull();
        Answer set = get(host(PORT, hex), "/cookie", cookie);
        assertThat(set.headers().get("set-cookie")).containsExactly("app=1; Path=/");
        assertThat(set.header("Content-Security-Policy")).isNull();
        Answer posted = request("POST", host(PORT, hex), "/up", cookie, "twelve bytes");
        assertThat(posted.body()).contains("\"length\": 12");
        Answer api = get(host(PORT, hex), "/v1/sessions", cookie);
        assertThat(api.body()).as("every path is the app's: no API route here").contains("\"path\": \"/v1/sessions\"");

        JsonNode seen = SessionApiTest.json(anyone.get("/v1/sessions/" + id + "/ports/" + PORT + "/seen"));
        JsonNode hello = null;
        for (JsonNode request : seen) {
            assertThat(request.get("path").asText()).doesNotContain("crucible_preview");
            assertThat(request.get("headers").toString()).doesNotContain("crucible_preview");
            if (request.get("path").asText().equals("/hello/there?q=1")) {
                hello = request.get("headers");
            }
        }
        assertThat(hello).isNotNull();
        assertThat(hello.get("Cookie").asText()).isEqualTo("app=2");
        assertThat(hello.get("X-Forwarded-Host").asText()).isEqualTo(host(PORT, hex));
        assertThat(hello.has("X-Forwarded-Prefix")).isFalse();
    }

    /**
     * On its own origin an app governs that origin (its CSP, its CORS, its host-only cookies), never another: no
     * {@code Domain} cookie, no forged preview cookie, no {@code Clear-Site-Data}, nothing not on the allow list.
     */
    @Test
    void onItsOwnOriginAnAppSetsItsOwnOriginsFieldsAndNothingBeyond() throws Exception {
        Answer r = get(host(PORT, hex), "/headers", "crucible_preview=" + link());
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().get("set-cookie")).containsExactly("own=1; Path=/");
        assertThat(r.header("Content-Security-Policy")).isEqualTo("script-src *");
        assertThat(r.header("Access-Control-Allow-Origin")).isEqualTo("*");
        assertThat(r.header("ETag")).isEqualTo("\"v1\"");
        for (String dropped : new String[] {"clear-site-data", "service-worker-allowed", "refresh", "link",
                "strict-transport-security", "origin-agent-cluster", "x-app"}) {
            assertThat(r.headers()).as(dropped).doesNotContainKey(dropped);
        }
    }

    /**
     * E2B's {@code getHost(port)}: a sandbox made through E2B's control plane names the preview listener as its
     * {@code domain}, and its {@code trafficAccessToken} in {@code e2b-traffic-access-token} opens each of its ports,
     * never another sandbox's, and never reaches its server.
     */
    @Test
    void anE2bSandboxsTrafficTokenOpensItsOwnPortsOnly() throws Exception {
        JsonNode sandbox = e2bSandboxWithApp();
        String sid = sandbox.get("sandboxID").asText();
        assertThat(sandbox.get("domain").asText()).isEqualTo("localhost:" + server.previewPort());
        String traffic = sandbox.get("trafficAccessToken").asText();
        String e2bHost = PORT + "-" + sid + ".localhost:" + server.previewPort();
        assertThat(traffic(e2bHost, "/seen", traffic).status()).isEqualTo(200);
        assertThat(traffic(e2bHost, "/seen", traffic).body()).doesNotContain(traffic)
                .doesNotContainIgnoringCase("e2b-traffic-access-token");
        assertThat(get(e2bHost, "/", null).status()).as("no token").isEqualTo(403);
        assertThat(traffic(host(PORT, hex), "/", traffic).status()).as("another session's port").isEqualTo(403);
        assertThat(traffic(e2bHost, "/", traffic.substring(1)).status()).isEqualTo(403);
        assertThat(e2b("DELETE", "/sandboxes/" + sid).statusCode()).isEqualTo(204);
    }

    /**
     * A traffic token is bound to its sandbox's life (issue 49 item 4): rotating the sandbox's tokens refuses the old
     * one and hands out a new one that opens its ports; killing the sandbox refuses that one too (403 invalid_preview,
     * as any preview token refused), on the listener and on the contexts route alike.
     */
    @Test
    void anE2bTrafficTokenDiesWithRotationAndWithItsSandbox() throws Exception {
        JsonNode sandbox = e2bSandboxWithApp();
        String sid = sandbox.get("sandboxID").asText();
        String old = sandbox.get("trafficAccessToken").asText();
        String e2bHost = PORT + "-" + sid + ".localhost:" + server.previewPort();
        assertThat(traffic(e2bHost, "/seen", old).status()).isEqualTo(200);

        HttpResponse<String> rotated = e2b("POST", "/sandboxes/" + sid + "/rotate-traffic-token");
        assertThat(rotated.statusCode()).as(rotated.body()).isEqualTo(200);
        String fresh = SessionApiTest.json(rotated).get("trafficAccessToken").asText();
        assertThat(fresh).isNotEqualTo(old);
        Answer refused = traffic(e2bHost, "/seen", old);
        assertThat(refused.status()).as("the token made before the rotation").isEqualTo(403);
        assertThat(refused.body()).contains("invalid_preview").contains("rotated");
        assertThat(traffic(e2bHost, "/seen", fresh).status()).isEqualTo(200);
        HttpResponse<String> connected = e2b("POST", "/sandboxes/" + sid + "/connect");
        assertThat(SessionApiTest.json(connected).get("trafficAccessToken").asText()).as("connect keeps the current")
                .isEqualTo(fresh);
        assertThat(contexts(sid, old)).isEqualTo(401);
        assertThat(contexts(sid, fresh)).isEqualTo(200);

        assertThat(e2b("DELETE", "/sandboxes/" + sid).statusCode()).isEqualTo(204);
        assertThat(traffic(e2bHost, "/seen", fresh).status()).as("its sandbox killed")
                .isEqualTo(403);
    }

    /**
     * A rotation racing connects and timeouts of the same sandbox (issue 49 item 4): whichever lands last, what is kept
     * is the rotation's nonce, so the token it handed out opens the ports and the one before it stays refused.
     */
    @Test
    void aRotationRacingConnectsAndTimeoutsIsNeverUndone() throws Exception {
        JsonNode sandbox = e2bSandboxWithApp();
        String sid = sandbox.get("sandboxID").asText();
        String e2bHost = PORT + "-" + sid + ".localhost:" + server.previewPort();
        String before = sandbox.get("trafficAccessToken").asText();
        try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int round = 0; round < 8; round++) {
                List<Future<HttpResponse<String>>> others = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    String call = i % 2 == 0 ? "/connect" : "/timeout";
                    others.add(pool.submit(() -> e2b("POST", "/sandboxes/" + sid + call, "{\"timeout\": 600}")));
                }
                HttpResponse<String> rotated = pool.submit(() -> e2b("POST", "/sandboxes/" + sid
                        + "/rotate-traffic-token")).get();
                for (var other : others) {
                    assertThat(other.get().statusCode()).as(other.get().body()).isBetween(200, 204);
                }
                String fresh = SessionApiTest.json(rotated).get("trafficAccessToken").asText();
                assertThat(SessionApiTest.json(e2b("POST", "/sandboxes/" + sid + "/connect"))
                        .get("trafficAccessToken").asText()).as("round " + round).isEqualTo(fresh);
                assertThat(traffic(e2bHost, "/seen", fresh).status()).isEqualTo(200);
                assertThat(traffic(e2bHost, "/seen", before).status()).isEqualTo(403);
                before = fresh;
            }
        }
        assertThat(e2b("DELETE", "/sandboxes/" + sid).statusCode()).isEqualTo(204);
    }

    /** A call to E2B's control plane with this server's (no) token as {@code X-API-KEY}. */
    private static HttpResponse<String> e2b(String method, String path) throws Exception {
        return e2b(method, path, "{}");
    }

    private static HttpResponse<String> e2b(String method, String path, String body) throws Exception {
        return anyone.send(HttpRequest.newBuilder(URI.create(anyone.base() + path))
                .header("X-API-KEY", "e2b_00").header("Content-Type", "application/json")
                .method(method, HttpRequest.BodyPublishers.ofString(body)));
    }

    /** The status of listing sandbox {@code sid}'s code contexts with {@code traffic} alone, as E2B's SDKs do. */
    private static int contexts(String sid, String traffic) throws Exception {
        return anyone.send(HttpRequest.newBuilder(URI.create(anyone.base() + "/contexts"))
                .header("E2b-Sandbox-Port", "49999").header("E2b-Sandbox-Id", sid)
                .header("E2B-Traffic-Access-Token", traffic).GET()).statusCode();
    }

    /** A sandbox made through E2B's control plane, its session serving the test app on {@link #PORT}. */
    private static JsonNode e2bSandboxWithApp() throws Exception {
        HttpResponse<String> made = anyone.send(HttpRequest.newBuilder(URI.create(anyone.base()
                + "/v2/sandboxes")).header("X-API-KEY", "e2b_00").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\": \"base\"}")));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        JsonNode sandbox = SessionApiTest.json(made);
        String sid = sandbox.get("sandboxID").asText();
        try (InputStream in = PortsTest.class.getResourceAsStream("/ports/app.py")) {
            assertThat(anyone.put("/v1/sessions/" + sid + "/files/app.py", in.readAllBytes()).statusCode()).isEqualTo(201);
        }
        assertThat(anyone.postJson("/v1/sessions/" + sid + "/commands", "{\"argv\": [\"python3\","
                + " \"/workspace/app.py\", \"" + PORT + "\"], \"background\": true}").statusCode()).isEqualTo(201);
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> SessionApiTest.json(
                anyone.get("/v1/sessions/" + sid)).get("ports").toString().contains("\"port\":" + PORT));
        return sandbox;
    }

    @Test
    void theCookieOpensOnlyItsOwnHostAndNothingElseOpensAny() throws Exception {
        String token = link();
        String cookie = "crucible_preview=" + token;
        String otherHex = hex.replace(hex.charAt(0), hex.charAt(0) == 'a' ? 'b' : 'a');
        for (String host : List.of(host(PORT + 1, hex), host(PORT, otherHex))) {
            Answer r = get(host, "/", cookie);
            assertThat(r.status()).as(host).isEqualTo(403);
            assertThat(r.body()).contains("invalid_preview");
            assertThat(get(host, "/?crucible_preview=" + token, null).status()).as(host).isEqualTo(403);
        }
        assertThat(get(host(PORT, hex), "/", null).status()).as("no cookie").isEqualTo(403);
        assertThat(get(host(PORT, hex), "/", "crucible_preview=; other=1").status()).isEqualTo(403);

        char last = token.charAt(token.length() - 1);
        String forged = token.substring(0, token.length() - 1) + (last == 'A' ? 'B' : 'A');
        String expired = PreviewTokens.in(config.sessions().dataDir()).mint(
                new PreviewTokens.Grant("", id, PORT, System.currentTimeMillis() - 1000));
        for (String bad : List.of(forged, expired, "nonsense")) {
            Answer r = get(host(PORT, hex), "/", "crucible_preview=" + bad);
            assertThat(r.status()).as(bad).isEqualTo(403);
            assertThat(r.body()).contains("invalid_preview");
            assertThat(get(host(PORT, hex), "/?crucible_preview=" + URLEncoder.encode(bad, StandardCharsets.UTF_8),
                    null).status()).as(bad).isEqualTo(403);
        }
        assertThat(get(host(PORT, hex), "/", "crucible_preview=" + forged + "; crucible_preview=" + token).status())
                .as("a cookie tossed from elsewhere does not hide this host's").isEqualTo(200);

        for (String host : List.of("127.0.0.1:" + server.previewPort(), "localhost", PORT + "-" + hex + ".example.com",
                PORT + "-" + hex + ".localhost.example.com", "0-" + hex + ".localhost", "70000-" + hex + ".localhost",
                PORT + "-" + hex.substring(1) + ".localhost", "x" + PORT + "-" + hex + ".localhost")) {
            Answer r = get(host, "/v1/sessions", cookie);
            assertThat(r.status()).as(host).isEqualTo(404);
            assertThat(r.body()).as(host).contains("not a preview host");
        }
    }

    @Test
    void aPreviewListenerBeyondLoopbackNeedsAToken() {
        assertThatThrownBy(() -> CrucibleServer.start(Http.config().withPreviewListen("0.0.0.0:0"), TestHost.crucible()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("refusing to listen on 0.0.0.0:0");
    }

    @Test
    void aWebSocketIsRelayedOnThePreviewsOrigin() throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.previewPort())) {
            s.setSoTimeout(60_000);
            OutputStream out = s.getOutputStream();
            out.write(("GET /ws HTTP/1.1\r\nHost: " + host(PORT, hex) + "\r\nCookie: crucible_preview=" + link()
                    + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            assertThat(readHead(in)).startsWith("HTTP/1.1 101");
            byte[] text = "through the preview".getBytes(StandardCharsets.UTF_8);
            byte[] mask = {1, 2, 3, 4};
            ByteArrayOutputStream frame = new ByteArrayOutputStream();
            frame.write(0x81);
            frame.write(0x80 | text.length);
            frame.write(mask);
            for (int i = 0; i < text.length; i++) {
                frame.write(text[i] ^ mask[i % 4]);
            }
            out.write(frame.toByteArray());
            out.flush();
            byte[] head = in.readNBytes(2);
            assertThat(head[0] & 0xFF).isEqualTo(0x81);
            assertThat(new String(in.readNBytes(head[1] & 0x7F), StandardCharsets.UTF_8))
                    .isEqualTo("THROUGH THE PREVIEW");
        }
    }

    @Test
    void aPageOnItsOwnOriginUsesItsCookiesStorageAndServerButCannotReachTheApi(@TempDir Path profile)
            throws Exception {
        int sessionsBefore = SessionApiTest.json(anyone.get("/v1/sessions")).get("sessions").size();
        // opened by its link route on the API's origin: the browser is sent to the preview's own origin
        String seen = PreviewTest.pageOutput("http://127.0.0.1:" + server.port() + "/v1/previews/" + link()
                + "/page2?api=" + server.port(), profile);
        assertThat(seen).as("the page's script ran to its end").startsWith("ran|");
        assertThat(seen).contains("origin=http://" + host(PORT, hex)).contains("search=?api=" + server.port() + "|");
        assertThat(seen).as("its own cookie, not the preview's (HttpOnly)").contains("|cookie=mine=1|")
                .doesNotContain("crucible_preview");
        assertThat(seen).contains("storage=v|");
        assertThat(seen).as("its fetch reached its server with its cookie only").contains("own=/seen:cookie=mine=1|");
        assertThat(seen).contains("list=refused:").contains("create=refused:").doesNotContain("read:");
        assertThat(SessionApiTest.json(anyone.get("/v1/sessions")).get("sessions").size())
                .as("no session made through the page").isEqualTo(sessionsBefore);
    }
}
