package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Preview links (issue 27 item 5) on a server with no token at all — the loopback set-up where a page that could read
 * the API could drive it: a link opens the session's port without a bearer, a forged or other link opens nothing, and a
 * preview page loaded in a real browser (headless Chromium) runs its scripts but cannot read the API's answers, its
 * cookies or storage, nor create a session through it.
 */
class PreviewTest {
    static final int PORT = 8766;
    static CrucibleServer server;
    static Http anyone;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        server = CrucibleServer.start(Http.config().withPort(0).withPool(Map.of()), TestHost.crucible());
        anyone = Http.to(server, null);
        id = PortsTest.startApp(anyone, PORT);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static String link(String body) throws Exception {
        HttpResponse<String> r = anyone.postJson("/v1/sessions/" + id + "/previews", body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return SessionApiTest.json(r).get("url").asText();
    }

    @Test
    void aLinkOpensThePortFencedInAndAForgedOneOpensNothing() throws Exception {
        String url = link("{\"port\": " + PORT + ", \"ttl_s\": 600}");
        assertThat(url).startsWith("http://127.0.0.1:" + server.port() + "/v1/previews/").endsWith("/");
        HttpResponse<String> page = anyone.client().send(HttpRequest.newBuilder(URI.create(url + "a/b?q=1")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(SessionApiTest.json(page).get("path").asText()).isEqualTo("/a/b?q=1");
        assertThat(page.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(csp ->
                assertThat(csp).startsWith("sandbox").doesNotContain("allow-same-origin"));

        String token = url.replaceAll(".*/v1/previews/([^/]+)/$", "$1");
        char last = token.charAt(token.length() - 1);
        String forged = token.substring(0, token.length() - 1) + (last == 'A' ? 'B' : 'A');
        for (String bad : List.of(forged, "nonsense", token.substring(1))) {
            HttpResponse<String> r = anyone.get("/v1/previews/" + bad + "/");
            assertThat(r.statusCode()).as(bad).isEqualTo(403);
            assertThat(r.body()).contains("invalid_preview");
        }
        assertThat(anyone.postJson("/v1/sessions/" + id + "/previews", "{\"port\": 0}").statusCode()).isEqualTo(400);
        assertThat(anyone.postJson("/v1/sessions/" + id + "/previews", "{\"port\": 80, \"ttl_s\": 999999}")
                .statusCode()).isEqualTo(400);
    }

    /**
     * What the page at {@code url} wrote into its {@code <pre id="out">}, loaded in headless Chromium with the profile
     * {@code profile} (its scripts given 15 s of virtual time); the test is skipped where there is no Chromium.
     */
    static String pageOutput(String url, Path profile) throws Exception {
        Path chromium = List.of(Path.of("/usr/bin/chromium"), Path.of("/usr/bin/chromium-browser")).stream()
                .filter(Files::isExecutable).findFirst().orElse(null);
        Capability.CHROMIUM.require(chromium != null ? null : "no Chromium (apt-get install chromium) to load a preview page in");
        Process browser = new ProcessBuilder(chromium.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--user-data-dir=" + profile, "--virtual-time-budget=15000", "--dump-dom", url)
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String dom = new String(browser.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(browser.waitFor(120, TimeUnit.SECONDS)).isTrue();
        Matcher out = Pattern.compile("<pre id=\"out\">(.*?)</pre>", Pattern.DOTALL).matcher(dom);
        assertThat(out.find()).as(dom).isTrue();
        return out.group(1);
    }

    @Test
    void aPreviewPageInABrowserCannotReadOrDriveTheApi(@TempDir Path profile) throws Exception {
        int sessionsBefore = SessionApiTest.json(anyone.get("/v1/sessions")).get("sessions").size();
        String seen = pageOutput(link("{\"port\": " + PORT + "}") + "page", profile);
        assertThat(seen).as("the page's script ran to its end").startsWith("ran|");
        assertThat(seen).contains("origin=null"); // an opaque origin: not the API's
        assertThat(seen).contains("cookie=blocked:SecurityError").contains("storage=blocked:SecurityError");
        assertThat(seen).contains("list=refused:").contains("create=refused:").doesNotContain("read:");
        assertThat(SessionApiTest.json(anyone.get("/v1/sessions")).get("sessions").size())
                .as("no session made through the page").isEqualTo(sessionsBefore);
    }
}
