package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code crucible serve --agent-sandbox} as the pod runs it (the JAR in its own JVM, the contracts on free loopback
 * ports), driven by agent-sandbox's own {@code tester.py} (vendored in crucible-server's test resources) with Debian's
 * python3 and requests.
 */
class AgentSandboxServeIT {
    static final Path TESTER = Path.of("../crucible-server/src/test/resources/agent-sandbox/python-runtime")
            .toAbsolutePath().normalize();
    static final Pattern RUNTIME = Pattern.compile("agent-sandbox python-runtime on http://127\\.0\\.0\\.1:(\\d+)");

    @Test
    void theExamplesTesterPassesAgainstServeAgentSandbox(@TempDir Path data) throws Exception {
        ServeIT.Served s = ServeIT.serve(data, "--agent-sandbox", "--agent-sandbox-ports", "0,0,0");
        try {
            int port = await().atMost(Duration.ofMinutes(1)).until(() -> List.copyOf(s.stderr()).stream()
                    .map(RUNTIME::matcher).filter(Matcher::find).map(m -> Integer.parseInt(m.group(1))).findFirst()
                    .orElse(-1), p -> p > 0);
            await().atMost(Duration.ofMinutes(2)).until(() -> ServeIT.get(port, "/").statusCode() == 200);
            String driver = String.join("\n", "import sys", "sys.path.insert(0, sys.argv[1])", "import tester",
                    "base = sys.argv[2]",
                    "for check in ['test_health_check', 'test_execute', 'test_list_files', 'test_exists',",
                    "              'test_path_traversal', 'test_absolute_path_traversal', 'test_upload',",
                    "              'test_upload_path_traversal']:",
                    "    getattr(tester, check)(base)", "print('ALL PASSED')");
            Process p = new ProcessBuilder("python3", "-c", driver, TESTER.toString(), "http://127.0.0.1:" + port)
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
            assertThat(p.exitValue()).as(out).isZero();
            assertThat(out).contains("Downloaded file content verified successfully!", "ALL PASSED");
            // the pod's session is Crucible's own too: its API on loopback lists it
            assertThat(ServeIT.get(s.port(), "/v1/sessions").body()).contains("\"language\":\"python\"");
        } finally {
            assertThat(s.stop(Duration.ofSeconds(30))).isTrue();
        }
        assertThat(ServeIT.slotProcesses()).isZero();
    }

    @Test
    void badPortsAreAUsageError(@TempDir Path dir) throws Exception {
        CliIT.Outcome o = CliIT.crucible(dir, "serve", "--port", "0", "--data-dir", dir.resolve("d").toString(),
                "--agent-sandbox", "--agent-sandbox-ports", "8888,8080");
        assertThat(o.exit()).isEqualTo(2);
        assertThat(o.stderr()).contains("--agent-sandbox-ports is RUNTIME,REST,GRPC");
    }
}
