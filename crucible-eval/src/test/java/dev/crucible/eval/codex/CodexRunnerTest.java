package dev.crucible.eval.codex;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.TestHost;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/** The Codex Runner workflow: its TOML both ways, run-tests in the sandbox, the CSV, and completions over HTTP. */
class CodexRunnerTest {
    static final JsonMapper JSON = JsonMapper.builder().build();

    static Path data(String name) throws Exception {
        return Path.of(CodexRunnerTest.class.getResource("/data/" + name).toURI());
    }

    @Test
    void bothReadmeSchemasAreReadAndWrittenInTheSameShape(@TempDir Path dir) throws Exception {
        for (String name : List.of("readme_example_v1_input.toml", "readme_example_v2_full.toml")) {
            ObjectNode root = CodexRunner.read(data(name));
            Path copy = dir.resolve(name);
            CodexRunner.write(root, copy);
            assertThat(CodexRunner.read(copy)).as(name).isEqualTo(root);
            assertThat(Files.readString(copy)).contains("[[questions]]").contains("'''");
        }
        Path broken = dir.resolve("broken.toml");
        Files.writeString(broken, "[[questions]]\nid = 'a'\nprompt = '''unclosed\n");
        assertThatThrownBy(() -> CodexRunner.read(broken)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("broken.toml");
    }

    @Test
    void runTestsRecordsResultsInBothSchemasAndTheReportScoresThem(@TempDir Path dir) throws Exception {
        CodexRunner runner = new CodexRunner(TestHost.crucible().executor());
        ObjectNode v2 = CodexRunner.read(data("readme_example_v2_full.toml"));
        ((ArrayNode) v2.get("questions").get(0).get("completions")).addObject()
                .put("code", "def greeting(name):\n    print('Hi', name)\n");
        CodexRunner.Summary s = runner.runTests(v2, 5_000);
        assertThat(s.tests()).isEqualTo(4);
        assertThat(s.passed()).as(v2.toPrettyString()).isEqualTo(2);
        JsonNode first = v2.get("questions").get(0).get("completions").get(0).get("test_results");
        assertThat(first.get(0).get("got").asString()).isEqualTo("Hello, James!");
        assertThat(first.get(1).get("got").asString()).isEqualTo("Hello, Sue!");

        // v1: results = [bools]; input() echoes what it reads (CodeRunner style); a hang is a failed test
        Path v1File = dir.resolve("v1.toml");
        Files.writeString(v1File, """
                [[questions]]
                id = 'echo'
                prompt = 'Ask for a name and greet it.'
                answer_preload = 'def greet():'
                [[questions.testcases]]
                code = 'greet()'
                stdin = 'Ann'
                expect = '''Name? Ann
                Hello Ann'''
                [[questions.testcases]]
                code = 'greet()'
                stdin = 'Bob'
                expect = '''Name? Bob
                Hello Bob'''
                [[questions.completions]]
                completion = '''def greet():
                    name = input('Name? ')
                    print('Hello', name)'''
                [[questions.completions]]
                completion = '''def greet():
                    while True: pass'''
                """);
        ObjectNode v1 = CodexRunner.read(v1File);
        CodexRunner.Summary s1 = runner.runTests(v1, 5_000); // room for the good ones while the hanging ones burn both cores
        assertThat(s1.passed()).isEqualTo(2);
        JsonNode completions = v1.get("questions").get(0).get("completions");
        assertThat(completions.get(0).get("results").toString()).isEqualTo("[true,true]");
        assertThat(completions.get(1).get("results").toString()).isEqualTo("[false,false]");
        Path out = dir.resolve("v1-out.toml");
        CodexRunner.write(v1, out);
        assertThat(Files.readString(out)).contains("results = [true, true]");

        String csv = CodexRunner.report(v1) + CodexRunner.report(v2);
        assertThat(csv).contains("question,completion_1,completion_2,mean,median,stdev,min,max")
                .contains("echo,1.0000,0.0000,0.5000,0.5000,0.7071,0.0000,1.0000")
                .contains("greeting,1.0000,0.0000,0.5000,0.5000,0.7071,0.0000,1.0000");
    }

    @Test
    void generateCompletionsRetriesAndStoresThePreloadedCode() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        List<String> auth = new CopyOnWriteArrayList<>();
        List<JsonNode> bodies = new CopyOnWriteArrayList<>();
        HttpServer api = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        api.createContext("/v1/chat/completions", exchange -> {
            auth.add(exchange.getRequestHeaders().getFirst("Authorization"));
            bodies.add(JSON.readTree(exchange.getRequestBody().readAllBytes()));
            int call = calls.incrementAndGet();
            String body;
            int status;
            if (call == 1) {
                status = 429;
                body = "{\"error\": {\"message\": \"slow down\"}}";
                exchange.getResponseHeaders().add("Retry-After", "0");
            } else if (call == 2) {
                status = 503;
                body = "{}";
            } else {
                status = 200;
                body = JSON.writeValueAsString(Map.of("choices", List.of(
                        Map.of("message", Map.of("role", "assistant", "content",
                                "Sure:\n```python\n    print(f\"Hello, {name}!\")\n```")),
                        Map.of("message", Map.of("role", "assistant", "content",
                                "def greeting(name):\n    print('Hello, ' + name + '!')\n")))));
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        api.start();
        try {
            ObjectNode root = CodexRunner.read(data("readme_example_v2_full.toml"));
            Completions.Summary s = new Completions().generate(root, new Completions.Options(
                    URI.create("http://127.0.0.1:" + api.getAddress().getPort() + "/v1"), "sk-test", "a-model", 2, 64,
                    0.5, 5, Duration.ofMillis(10)));
            assertThat(s.problems()).isEmpty();
            assertThat(s.requests()).isEqualTo(3);
            assertThat(s.retries()).isEqualTo(2);
            assertThat(auth).containsOnly("Bearer sk-test");
            JsonNode request = bodies.getLast();
            assertThat(request.get("model").asString()).isEqualTo("a-model");
            assertThat(request.get("n").asInt()).isEqualTo(2);
            assertThat(request.get("messages").get(0).get("content").asString()).endsWith("def greeting(name):\n");
            JsonNode completions = root.get("questions").get(0).get("completions");
            assertThat(completions.size()).isEqualTo(2);
            assertThat(completions.get(0).get("completion").asString())
                    .isEqualTo("def greeting(name):\n    print(f\"Hello, {name}!\")\n");
            assertThat(completions.get(1).get("completion").asString()).startsWith("def greeting(name):\n    print('Hello");
            // the generated file feeds run-tests as it is
            CodexRunner.Summary tested = new CodexRunner(TestHost.crucible().executor()).runTests(root, 5_000);
            assertThat(tested.passed()).isEqualTo(4);
        } finally {
            api.stop(0);
        }
    }

    /** A closed port: the problem names the URL and what failed (the JDK's client gives a refusal no message). */
    @Test
    void anUnreachableApiIsReportedWithTheUrlAndWhatFailed() throws Exception {
        int closed;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        ObjectNode root = CodexRunner.read(data("readme_example_v2_full.toml"));
        Completions.Summary s = new Completions().generate(root, new Completions.Options(
                URI.create("http://127.0.0.1:" + closed + "/v1"), "sk-test", "a-model", 1, 16, 0.5, 1,
                Duration.ofMillis(1)));
        assertThat(s.completions()).isZero();
        assertThat(s.problems()).isNotEmpty().allSatisfy(problem -> assertThat(problem)
                .contains("POST http://127.0.0.1:" + closed + "/v1/chat/completions")
                .contains("cannot connect").contains("java.net.ConnectException").contains("(2 attempts)")
                .doesNotContain(": null"));
    }

    @Test
    void theKeyComesFromTheEnvironmentOrADotEnvFile(@TempDir Path dir) throws Exception {
        assertThat(Completions.apiKey(Map.of("OPENAI_API_KEY", "sk-env"), dir)).isEqualTo("sk-env");
        assertThat(Completions.apiKey(Map.of(), dir)).isNull();
        Files.writeString(dir.resolve(".env"), "# keys\nOTHER=1\nexport OPENAI_API_KEY=\"sk-file\"\n");
        assertThat(Completions.apiKey(Map.of(), dir)).isEqualTo("sk-file");
    }
}
