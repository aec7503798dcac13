package dev.crucible.server.agentsandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * agent-sandbox's python-runtime contract against a real pod (the session's real sandbox): the example's own
 * {@code tester.py} run by Debian's python3 with requests, and {@code test_main.py}'s requests replayed (it drives
 * {@code main.py} in-process with subprocess mocked; vendored in {@code src/test/resources/agent-sandbox}).
 */
class PythonRuntimeContractTest {
    static final Path VENDORED = Path.of("src/test/resources/agent-sandbox/python-runtime").toAbsolutePath();
    private static PodUnderTest pod;

    @BeforeAll
    static void start() throws Exception {
        pod = new PodUnderTest(Map.of());
    }

    @AfterAll
    static void stop() {
        pod.close();
    }

    static JsonNode json(HttpResponse<String> r) {
        return Exchanges.JSON.readTree(r.body());
    }

    @Test
    void theExamplesTesterPassesEveryCheckButTheMlLibraries() throws Exception {
        String driver = String.join("\n", "import sys", "sys.path.insert(0, sys.argv[1])", "import tester",
                "base = sys.argv[2]",
                "for check in ['test_health_check', 'test_execute', 'test_list_files', 'test_exists',",
                "              'test_path_traversal', 'test_absolute_path_traversal', 'test_upload',",
                "              'test_upload_path_traversal']:",
                "    getattr(tester, check)(base)", "print('ALL PASSED')");
        Process p = new ProcessBuilder("python3", "-c", driver, VENDORED.toString(), pod.base()).redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(2, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("Health check successful!", "Execute command successful!", "List files successful!",
                "Exists check (negative) successful!", "Path traversal blocked successfully!",
                "Absolute path traversal blocked successfully!", "Downloaded file content verified successfully!",
                "Upload path traversal blocked successfully!", "ALL PASSED");
    }

    @Test
    void healthAndExecuteAnswerAsTheExample() throws Exception {
        assertThat(json(pod.get("/"))).isEqualTo(Exchanges.JSON.readTree(
                "{\"status\": \"ok\", \"message\": \"Sandbox Runtime is active.\"}"));
        assertThat(json(pod.execute("echo hello"))).isEqualTo(Exchanges.JSON.readTree(
                "{\"stdout\": \"hello\\n\", \"stderr\": \"\", \"exit_code\": 0}"));
        // split as shlex.split does, no shell: the quotes go, the $ stays
        assertThat(json(pod.execute("printf '%s|' 'a b' \"c\\\"d\" $HOME")).get("stdout").asString())
                .isEqualTo("a b|c\"d|$HOME|");
        JsonNode failed = json(pod.execute("echo 'unterminated"));
        assertThat(failed.get("exit_code").asInt()).isEqualTo(1);
        assertThat(failed.get("stderr").asString()).startsWith("Failed to execute command").contains("No closing");
        JsonNode exit = json(pod.execute("sh -c 'echo out; echo err >&2; exit 3'"));
        assertThat(exit.get("stdout").asString()).isEqualTo("out\n");
        assertThat(exit.get("stderr").asString()).isEqualTo("err\n");
        assertThat(exit.get("exit_code").asInt()).isEqualTo(3);
    }

    @Test
    void commandsRunInTheSessionsSandboxFromTheBaseDirectory() throws Exception {
        assertThat(json(pod.execute("pwd")).get("stdout").asString()).isEqualTo("/workspace\n");
        // the sandbox's own user and pid namespace: uid 1000, and pid 1 is not this JVM's
        assertThat(json(pod.execute("id -u")).get("stdout").asString()).isEqualTo("1000\n");
        assertThat(json(pod.execute("sh -c 'kill -0 " + ProcessHandle.current().pid() + "'")).get("exit_code").asInt())
                .isNotZero();
    }

    @Test
    void filesUploadDownloadListAndExistUnderTheBase() throws Exception {
        assertThat(pod.upload("nested/dir/uploaded.txt", "hello").statusCode()).isEqualTo(200);
        assertThat(pod.get("/download/nested/dir/uploaded.txt").body()).isEqualTo("hello");
        assertThat(json(pod.execute("cat nested/dir/uploaded.txt")).get("stdout").asString()).isEqualTo("hello");
        assertThat(pod.get("/download/missing.txt").statusCode()).isEqualTo(404);
        assertThat(pod.get("/download/nested").statusCode()).as("a directory is no file").isEqualTo(404);
        pod.execute("mkdir -p listed/sub");
        pod.execute("sh -c 'echo a > listed/a.txt'");
        HttpResponse<String> list = pod.get("/list/listed");
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(json(list).valueStream().map(e -> e.get("name").asString() + " " + e.get("type").asString()))
                .containsExactlyInAnyOrder("a.txt file", "sub directory");
        assertThat(json(list).valueStream().filter(e -> e.get("name").asString().equals("a.txt"))
                .map(e -> e.get("size").asLong())).containsExactly(2L);
        assertThat(pod.get("/list/listed/a.txt").statusCode()).isEqualTo(404);
        assertThat(json(pod.get("/exists/listed/a.txt"))).isEqualTo(Exchanges.JSON.readTree(
                "{\"path\": \"listed/a.txt\", \"exists\": true}"));
        assertThat(json(pod.get("/exists/absent.txt"))).isEqualTo(Exchanges.JSON.readTree(
                "{\"path\": \"absent.txt\", \"exists\": false}"));
    }

    @Test
    void pathsOutsideTheBaseAreAccessDenied() throws Exception {
        for (String path : List.of("/exists/..%2F..%2Fetc%2Fpasswd", "/exists/%2F..%2Fetc%2Fpasswd",
                "/download/..%2Fetc%2Fpasswd", "/list/..", "/exists/foo%2F..%2F..%2Fbar")) {
            HttpResponse<String> r = pod.get(path);
            assertThat(r.statusCode()).as(path).isEqualTo(403);
            assertThat(json(r)).as(path).isEqualTo(Exchanges.JSON.readTree("{\"message\": \"Access denied\"}"));
        }
        HttpResponse<String> upload = pod.upload("../../unsafe_upload.txt", "malicious payload");
        assertThat(upload.statusCode()).isEqualTo(403);
        assertThat(json(pod.execute("ls /")).get("stdout").asString()).doesNotContain("unsafe_upload.txt");
        // a leading slash is the base's, as the example strips it
        assertThat(json(pod.get("/exists/%2Fnested")).get("exists").asBoolean()).isFalse();
    }

    @Test
    void badRequestsAreClearFourHundreds() throws Exception {
        HttpResponse<String> notJson = pod.post("/execute", "application/json", "{command");
        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(json(notJson).get("message").asString()).contains("{\"command\"");
        assertThat(pod.post("/execute", "application/json", "{\"command\": 7}").statusCode()).isEqualTo(400);
        assertThat(pod.post("/upload", "text/plain", "x").statusCode()).isEqualTo(400);
        assertThat(pod.get("/execute").statusCode()).isEqualTo(405);
        assertThat(pod.get("/nowhere").statusCode()).isEqualTo(404);
    }

    @Test
    void theExecTimeoutKillsTheCommandsProcessGroupAndTheBaseDirIsHonoured() throws Exception {
        try (PodUnderTest timed = new PodUnderTest(Map.of("SANDBOX_EXEC_TIMEOUT_SECONDS", "1",
                "SANDBOX_BASE_DIR", "/workspace/app"))) {
            assertThat(json(timed.execute("pwd")).get("stdout").asString()).isEqualTo("/workspace/app\n");
            JsonNode late = json(timed.execute("sh -c 'sleep 600 & sleep 600'"));
            assertThat(late.get("exit_code").asInt()).isEqualTo(1);
            assertThat(late.get("stderr").asString()).startsWith("Failed to execute command").contains("timed out");
            // the background sleep was in the command's process group: gone too
            Awaitility.await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(json(timed.execute(
                    "sh -c 'cat /proc/[0-9]*/cmdline | tr \"\\\\0\" \" \"'")).get("stdout").asString())
                    .doesNotContain("sleep 600"));
        }
    }
}
