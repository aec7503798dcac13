package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The official E2B SDKs from npm (e2b, @e2b/code-interpreter), unmodified, driven by clients/node-tests/e2b.mjs against
 * the E2B-compatible API: control plane, envd and code interpreter all on the server's one plain-HTTP port
 * (E2B_API_URL = E2B_SANDBOX_URL), the API key one of the server's tokens.
 */
class E2bSdkTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    /** "e2b_" and 40 hex digits: the Python SDK refuses a key of another shape (unless E2B_VALIDATE_API_KEY=false). */
    static final String TOKEN = "e2b_" + "0123456789abcdef0123456789abcdef01234567";
    static CrucibleServer server;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN)).withPool(Map.of()),
                TestHost.crucible());
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    record Run(boolean finished, int exit, List<String> lines) {}

    /** Runs {@code node e2b.mjs scenario} in clients/node-tests against the server; what it printed, line by line. */
    static Run nodeScenario(String scenario) throws Exception {
        return nodeScenario(scenario, server.port(), Map.of());
    }

    /** As {@link #nodeScenario(String)}, against the server on {@code port}, with {@code extra} in node's environment. */
    static Run nodeScenario(String scenario, int port, Map<String, String> extra) throws Exception {
        return nodeScript("e2b.mjs", scenario, port, extra);
    }

    /** As {@link #nodeScenario(String, int, Map)}, running {@code script} of clients/node-tests. */
    static Run nodeScript(String script, String scenario, int port, Map<String, String> extra) throws Exception {
        Path dir = Path.of("..", "clients", "node-tests").toAbsolutePath().normalize();
        Capability.NPM_CLIENTS.require(Files.isDirectory(dir.resolve("node_modules/e2b"))
                && Files.isDirectory(dir.resolve("node_modules/@e2b/code-interpreter"))
                && Files.isDirectory(dir.resolve("node_modules/@e2b/desktop")) ? null
                : dir + "/node_modules/e2b, @e2b/code-interpreter or @e2b/desktop is missing (npm ci there;"
                        + " ./run-tests does)");
        ProcessBuilder builder = new ProcessBuilder("node", script, scenario).directory(dir.toFile())
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        Map<String, String> env = builder.environment();
        env.keySet().removeIf(name -> name.startsWith("E2B_")); // no E2B_DEBUG, E2B_DOMAIN, ... from the machine
        String base = "http://127.0.0.1:" + port;
        env.putAll(extra);
        env.put("E2B_API_URL", base);
        env.put("E2B_SANDBOX_URL", base);
        env.put("E2B_API_KEY", TOKEN);
        Process node = builder.start();
        CompletableFuture<List<String>> out = CompletableFuture.supplyAsync(() -> {
            List<String> lines = new ArrayList<>();
            try (BufferedReader reader = new BufferedReader(
                    new InputStreamReader(node.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = reader.readLine()) != null;) {
                    System.out.println(script + " " + scenario + ": " + line);
                    lines.add(line);
                }
            } catch (IOException e) {
                lines.add("(reading node's output failed: " + e + ")");
            }
            return lines;
        });
        boolean finished = node.waitFor(10, TimeUnit.MINUTES);
        if (!finished) {
            node.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        return new Run(finished, finished ? node.exitValue() : -1, out.get(30, TimeUnit.SECONDS));
    }

    /** The lines of the steps that failed, optional ones (reported, not counted) apart. */
    static List<String> failedSteps(List<String> lines, boolean optional) {
        List<String> failed = new ArrayList<>();
        for (String line : lines) {
            JsonNode step;
            try {
                step = JSON.readTree(line);
            } catch (RuntimeException notJson) {
                continue;
            }
            if (step.has("step") && !step.path("ok").asBoolean() && step.path("optional").asBoolean() == optional) {
                failed.add(line);
            }
        }
        return failed;
    }

    static void assertScenario(String scenario) throws Exception {
        assertRun(scenario, nodeScenario(scenario));
    }

    /** Fails unless {@code run} of {@code scenario} ended with every counted step passed. */
    static void assertRun(String scenario, Run run) throws Exception {
        List<String> optional = failedSteps(run.lines(), true);
        if (!optional.isEmpty()) {
            System.out.println("e2b.mjs " + scenario + ": optional steps that failed (not counted):\n  "
                    + String.join("\n  ", optional));
        }
        String last = run.lines().isEmpty() ? "(no output)" : run.lines().getLast();
        String failures = String.join("\n  ", failedSteps(run.lines(), false));
        assertThat(run.finished()).as("node e2b.mjs %s did not end within 10 minutes; its output:\n%s", scenario,
                String.join("\n", run.lines())).isTrue();
        assertThat(run.exit()).as("node e2b.mjs %s exited %d; failed steps:\n  %s\nlast line: %s", scenario, run.exit(),
                failures, last).isZero();
        JsonNode summary = JSON.readTree(last);
        assertThat(summary.path("failed").asInt(-1)).as(last).isZero();
        assertThat(summary.path("passed").asInt()).as(last).isPositive();
    }

    @Test
    void officialSdksFullScenario() throws Exception {
        assertScenario("all");
    }

    @Test
    void rewardFunctionFlow() throws Exception {
        assertScenario("reward");
    }
}
