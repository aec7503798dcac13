package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TypeScript SDK (clients/typescript) against a real server: its node:test suites, the SDK's and each agent
 * framework's loop (the AI SDK, LangChain.js, the OpenAI Agents SDK, each from npm, pinned by the lock file), run by
 * node. The server runs one program at a time with no queue, so that a second at once is refused with 429 and
 * Retry-After, which the SDK's retry test needs.
 */
class TypeScriptSdkTest {
    static final String TOKEN = "typescript-sdk-token";
    static final Path DIR = Path.of("..", "clients", "typescript").toAbsolutePath().normalize();

    @Test
    void theSdkAndTheFrameworkLoopsPassAgainstThisServer() throws Exception {
        Capability.TYPESCRIPT_SDK.require(Files.isRegularFile(DIR.resolve("dist/index.js"))
                && Files.isDirectory(DIR.resolve("node_modules/ai")) ? null
                : DIR + " is not installed and built (./run-tests runs npm ci and npm run build there)");
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN))
                .withPool(Map.of()).withConcurrency(1, 0), TestHost.crucible())) {
            ProcessBuilder builder = new ProcessBuilder("node", "--experimental-websocket", "--test",
                    "--test-concurrency=1", "test/").directory(DIR.toFile()).redirectErrorStream(true);
            builder.environment().put("CRUCIBLE_URL", "http://127.0.0.1:" + server.port());
            builder.environment().put("CRUCIBLE_TOKEN", TOKEN);
            Process node = builder.start();
            byte[] out = node.getInputStream().readAllBytes();
            assertThat(node.waitFor(10, TimeUnit.MINUTES)).isTrue();
            String output = new String(out, StandardCharsets.UTF_8);
            System.out.println(output);
            assertThat(node.exitValue()).as(output).isZero();
            assertThat(output).contains("# fail 0").doesNotContain("# skipped 1").containsPattern("# pass ([89]|\\d\\d)");
        }
    }

    /**
     * {@code npm pack} makes a tarball that installs (offline: it depends on nothing) into a new project, and the
     * README's TypeScript example, as a newcomer copies it, runs from that install.
     */
    @Test
    void thePackedTarballInstallsAndTheReadmesExampleRunsFromIt(@TempDir Path project)
            throws Exception {
        Capability.TYPESCRIPT_SDK.require();
        String packed = run(DIR, Map.of(), "npm", "pack", "--silent", "--pack-destination", project.toString()).strip();
        assertThat(project.resolve(packed)).exists();
        Files.writeString(project.resolve("package.json"), "{\"name\": \"newcomer\", \"private\": true, \"type\": \"module\"}");
        run(project, Map.of(), "npm", "install", "--offline", "--no-audit", "--no-fund", "./" + packed);
        Files.writeString(project.resolve("example.mjs"), readmeExample("### TypeScript", "js"));
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN))
                .withPool(Map.of()), TestHost.crucible())) {
            String out = run(project, Map.of("CRUCIBLE_URL", "http://127.0.0.1:" + server.port(), "CRUCIBLE_TOKEN",
                    TOKEN), "node", "example.mjs");
            assertThat(out).isEqualTo("42\n42\n");
        }
    }

    /** The first {@code language} code block of the README after the heading {@code heading}. */
    static String readmeExample(String heading, String language) throws IOException {
        String readme = Files.readString(DIR.resolve("../../README.md").normalize());
        int at = readme.indexOf("\n" + heading + "\n");
        assertThat(at).as("the README has " + heading).isPositive();
        int start = readme.indexOf("```" + language + "\n", at) + language.length() + 4;
        return readme.substring(start, readme.indexOf("```", start));
    }

    private static String run(Path dir, Map<String, String> env, String... command) throws Exception {
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectError(
                ProcessBuilder.Redirect.INHERIT);
        builder.environment().putAll(env);
        Process p = builder.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + ": " + out).isZero();
        return out;
    }

    @Test
    void theSdkKnowsEveryErrorCodeTheServerAnswers() throws Exception {
        String errors = Files.readString(DIR.resolve("src/errors.ts"));
        assertThat(Arrays.stream(ErrorCode.values()).map(c -> c.name().toLowerCase(Locale.ROOT)))
                .allSatisfy(code -> assertThat(errors).as("src/errors.ts names " + code).contains("\"" + code + "\""));
    }
}
