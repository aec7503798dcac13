package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.client.CodeTools;
import dev.crucible.client.CrucibleClient;
import dev.crucible.client.ExecuteRequest;
import dev.crucible.client.Tools;
import dev.crucible.testhost.Capability;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The tools for a model: their schemas at /v1/tools, calls at /v1/tools/call, the Java {@link CodeTools#fromResponse}
 * on OpenAI and Anthropic replies, and the Python client's unittest suite, all against the real server.
 */
class AgentToolsTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String TOKEN = "agent-token";
    static CrucibleServer server;
    static Http http;
    static CrucibleClient crucible;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN)).withPool(Map.of()),
                TestHost.crucible());
        http = Http.to(server, TOKEN);
        crucible = CrucibleClient.create(URI.create(http.base()), TOKEN);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    static JsonNode json(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    static JsonNode openai(String... nameAndArguments) {
        ObjectNode message = JSON.createObjectNode().put("role", "assistant");
        message.putNull("content");
        for (int i = 0; i < nameAndArguments.length; i += 2) {
            ObjectNode call = message.withArray("tool_calls").addObject().put("id", "call_" + i).put("type", "function");
            call.putObject("function").put("name", nameAndArguments[i]).put("arguments", nameAndArguments[i + 1]);
        }
        ObjectNode completion = JSON.createObjectNode().put("object", "chat.completion");
        completion.putArray("choices").addObject().put("index", 0).set("message", message);
        return completion;
    }

    static JsonNode anthropic(Object... nameAndInput) {
        ObjectNode message = JSON.createObjectNode().put("type", "message").put("role", "assistant");
        message.putArray("content").addObject().put("type", "text").put("text", "Let me run it.");
        for (int i = 0; i < nameAndInput.length; i += 2) {
            ((ArrayNode) message.get("content")).addObject().put("type", "tool_use")
                    .put("id", "toolu_" + i).put("name", (String) nameAndInput[i])
                    .set("input", JSON.valueToTree(nameAndInput[i + 1]));
        }
        return message;
    }

    @Test
    void schemasInEveryFormatCarryTheWholeGuidance() throws Exception {
        JsonNode openai = json(http.get("/v1/tools?format=openai&set=stateless"));
        assertThat(openai.size()).isEqualTo(1);
        JsonNode function = openai.get(0).get("function");
        assertThat(openai.get(0).get("type").asString()).isEqualTo("function");
        assertThat(function.get("name").asString()).isEqualTo("run_code");
        String description = function.get("description").asString();
        assertThat(description.lines().count()).isGreaterThan(5); // the replit client sent only the first line
        assertThat(description).contains("no Markdown code fences", "print()", "no network", "Limits");
        assertThat(function.get("parameters").get("required").get(0).asString()).isEqualTo("code");
        assertThat(function.at("/parameters/properties/language/enum").valueStream().map(JsonNode::asString))
                .startsWith("python").contains("javascript", "c");

        JsonNode legacy = json(http.get("/v1/tools?format=openai-functions&set=stateless")).get(0);
        assertThat(legacy).isEqualTo(function);
        JsonNode claude = json(http.get("/v1/tools?format=anthropic&set=session"));
        assertThat(claude.findValuesAsString("name")).containsExactly("run_in_session", "write_file", "read_file",
                "list_files", Tools.TEXT_EDITOR, Tools.APPLY_PATCH, Tools.SHELL, Tools.BASH);
        // Claude's own text editor goes as Anthropic's client tool: its type and name, no schema
        assertThat(claude.get(4).get("type").asString()).isEqualTo("text_editor_20250728");
        assertThat(claude.get(4).has("input_schema")).isFalse();
        assertThat(claude.get(0).get("input_schema").get("required").get(0).asString()).isEqualTo("code");
        JsonNode mcp = json(http.get("/v1/tools?format=mcp"));
        assertThat(mcp.findValuesAsString("name")).containsExactly("run_code", "list_runtimes", "create_session",
                "run_in_session", "write_file", "read_file", "list_files", Tools.TEXT_EDITOR, Tools.APPLY_PATCH,
                Tools.SHELL, Tools.BASH, "close_session");
        assertThat(mcp.get(0).get("inputSchema")).isEqualTo(function.get("parameters"));
        // the Java client renders the same tools as the server
        assertThat(CodeTools.of(crucible, Tools.Set.STATELESS).openai()).isEqualTo(openai);

        assertThat(http.get("/v1/tools?format=gemini").statusCode()).isEqualTo(400);
        assertThat(http.get("/v1/tools?set=some").statusCode()).isEqualTo(400);
        assertThat(Http.to(server, null).get("/v1/tools").statusCode()).isEqualTo(401);
    }

    @Test
    void openaiToolCallsRunAndFencesAreRemoved() {
        CodeTools tools = CodeTools.of(crucible, Tools.Set.STATELESS);
        List<ObjectNode> messages = tools.fromResponse(openai(
                "run_code", "{\"code\": \"```python\\nprint(6 * 7)\\n```\"}",
                "run_code", "{\"code\": \"console.log(2 ** 10)\", \"language\": \"javascript\"}",
                "run_code", "{\"code\": \"import sys\\nprint('out')\\nsys.exit(4)\"}"));
        assertThat(messages).hasSize(3);
        assertThat(messages.get(0).toString()).isEqualTo("{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"42\\n\"}");
        assertThat(messages.get(1).get("content").asString()).isEqualTo("1024\n");
        assertThat(messages.get(2).get("content").asString()).isEqualTo("out\n[the program failed with exit code 4]");

        ObjectNode legacy = JSON.createObjectNode();
        legacy.putArray("choices").addObject().putObject("message").put("role", "assistant")
                .putObject("function_call").put("name", "run_code").put("arguments", "{\"code\": \"print('legacy')\"}");
        assertThat(tools.fromResponse(legacy).getFirst().toString())
                .isEqualTo("{\"role\":\"function\",\"name\":\"run_code\",\"content\":\"legacy\\n\"}");
    }

    @Test
    void anthropicToolUseGivesOneUserMessageOfResults() {
        CodeTools tools = CodeTools.of(crucible, Tools.Set.STATELESS);
        List<ObjectNode> messages = tools.fromResponse(anthropic(
                "run_code", Map.of("code", "print(sum(range(101)))"),
                "run_code", Map.of("code", "while True: pass")));
        assertThat(messages).hasSize(1);
        JsonNode results = messages.getFirst().get("content");
        assertThat(messages.getFirst().get("role").asString()).isEqualTo("user");
        assertThat(results.get(0).get("type").asString()).isEqualTo("tool_result");
        assertThat(results.get(0).get("tool_use_id").asString()).isEqualTo("toolu_0");
        assertThat(results.get(0).at("/content/0/text").asString()).isEqualTo("5050\n");
        assertThat(results.get(1).at("/content/0/text").asString()).contains("timeout");
        assertThat(results.get(1).has("is_error")).isFalse(); // a program that fails is a result, not a failed call
    }

    @Test
    void sessionToolsKeepStateAndShowFigures() {
        try (CodeTools tools = CodeTools.of(crucible, Tools.Set.SESSION)) {
            assertThat(tools.openai().get(0).at("/function/name").asString()).isEqualTo("run_in_session");
            List<ObjectNode> first = tools.fromResponse(openai(
                    "run_in_session", "{\"code\": \"data = [3, 1, 2]\"}",
                    "write_file", "{\"path\": \"notes.txt\", \"content\": \"remember me\"}"));
            assertThat(first.get(1).get("content").asString()).isEqualTo("Wrote 11 bytes to /workspace/notes.txt.");
            String id = tools.sessionId();
            assertThat(id).matches("[0-9a-f]{32}");
            List<ObjectNode> second = tools.fromResponse(anthropic(
                    "run_in_session", Map.of("code", "sorted(data) + [open('notes.txt').read()]"),
                    "list_files", Map.of()));
            JsonNode results = second.getFirst().get("content");
            assertThat(results.get(0).at("/content/0/text").asString()).isEqualTo("Out[2]: [1, 2, 3, 'remember me']");
            assertThat(results.get(1).at("/content/0/text").asString()).isEqualTo("notes.txt  (11 bytes)");
            assertThat(tools.sessionId()).isEqualTo(id);

            boolean matplotlib = crucible.execute(ExecuteRequest.of("python",
                    "import matplotlib")).ok();
            Capability.MATPLOTLIB.require(matplotlib ? null
                    : "the sandbox cannot import matplotlib (./run-tests installs python3-matplotlib)");
            JsonNode figure = tools.fromResponse(anthropic("run_in_session", Map.of("code",
                    "import matplotlib.pyplot as plt\nplt.plot(data)\nplt.show()"))).getFirst().at("/content/0/content");
            assertThat(figure.findValuesAsString("type")).contains("text", "image");
            assertThat(figure.get(1).at("/source/media_type").asString()).isEqualTo("image/png");
            assertThat(Base64.getDecoder().decode(figure.get(1).at("/source/data").asString()))
                    .startsWith(0x89, 'P', 'N', 'G');
        }
    }

    @Test
    void theEditingToolsAgentsCallChangeTheFilesTheSessionRuns() throws Exception {
        try (CodeTools tools = CodeTools.of(crucible, Tools.Set.SESSION)) {
            JsonNode created = tools.fromResponse(anthropic(Tools.TEXT_EDITOR, Map.of("command", "create", "path",
                    "/workspace/calc.py", "file_text", "def add(a, b):\n    return a - b\n"), "run_in_session",
                    Map.of("code", "from calc import add\nadd(2, 3)"))).getFirst().get("content");
            assertThat(created.get(0).at("/content/0/text").asString())
                    .isEqualTo("File created successfully at: /workspace/calc.py");
            assertThat(created.get(1).at("/content/0/text").asString()).isEqualTo("Out[1]: -1");
            JsonNode fixed = tools.fromResponse(anthropic(Tools.TEXT_EDITOR, Map.of("command", "str_replace", "path",
                    "/workspace/calc.py", "old_str", "a - b", "new_str", "a + b"), Tools.TEXT_EDITOR,
                    Map.of("command", "str_replace", "path", "/workspace/calc.py", "old_str", "nothing like it",
                            "new_str", "x"))).getFirst().get("content");
            assertThat(fixed.get(0).at("/content/0/text").asString())
                    .isEqualTo("Successfully replaced text at exactly one location.");
            assertThat(fixed.get(1).get("is_error").asBoolean()).isTrue();
            assertThat(fixed.get(1).at("/content/0/text").asString()).isEqualTo(
                    "Error: No match found for replacement. Please check your text and try again.");
            JsonNode viewed = tools.fromResponse(anthropic(Tools.TEXT_EDITOR, Map.of("command", "view", "path",
                    "/workspace/calc.py", "view_range", List.of(2, 2)))).getFirst().get("content");
            assertThat(viewed.get(0).at("/content/0/text").asString()).isEqualTo(
                    "Here's the result of running `cat -n` on /workspace/calc.py:\n     2\t    return a + b\n");

            // OpenAI's apply_patch: the operation as the Responses API's apply_patch_call carries it
            String id = tools.sessionId();
            JsonNode patched = json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name",
                    Tools.APPLY_PATCH, "arguments", Map.of("call_id", "call_7", "session_id", id, "operation",
                            Map.of("type", "update_file", "path", "calc.py", "diff",
                                    "@@ def add(a, b):\n-    return a + b\n+    return a + b + 1\n"))))));
            assertThat(patched.at("/result/type").asString()).isEqualTo("apply_patch_call_output");
            assertThat(patched.at("/result/call_id").asString()).isEqualTo("call_7");
            assertThat(patched.at("/result/status").asString()).as(patched.toString()).isEqualTo("completed");
            JsonNode rerun = tools.fromResponse(anthropic("run_in_session", Map.of("code",
                    "import importlib, calc\nimportlib.reload(calc).add(2, 3)"))).getFirst().get("content");
            assertThat(rerun.get(0).at("/content/0/text").asString()).isEqualTo("Out[2]: 6");
            JsonNode failed = json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name",
                    Tools.APPLY_PATCH, "arguments", Map.of("session_id", id, "operation", Map.of("type", "update_file",
                            "path", "calc.py", "diff", "@@\n-    return 42\n+    return 0\n"))))));
            assertThat(failed.get("is_error").asBoolean()).isTrue();
            assertThat(failed.at("/result/status").asString()).isEqualTo("failed");
            assertThat(failed.at("/result/output").asString()).startsWith("Invalid Context");

            // OpenAI's shell: a shell_call's action, each command on its own, one outcome each
            JsonNode shell = json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name", Tools.SHELL,
                    "arguments", Map.of("call_id", "call_8", "session_id", id, "action", Map.of("commands",
                            List.of("cd /tmp; echo $((2 ** 10))", "pwd; [[ -f calc.py ]] && echo bash here",
                                    "echo to stderr >&2; exit 3"), "timeout_ms", 20_000, "max_output_length", 4096))))));
            assertThat(shell.get("is_error").asBoolean()).as(shell.toString()).isFalse();
            assertThat(shell.at("/result/type").asString()).isEqualTo("shell_call_output");
            assertThat(shell.at("/result/call_id").asString()).isEqualTo("call_8");
            assertThat(shell.at("/result/max_output_length").asInt()).isEqualTo(4096);
            assertThat(shell.at("/result/output/0/stdout").asString()).isEqualTo("1024\n");
            assertThat(shell.at("/result/output/1/stdout").asString()).isEqualTo("/workspace\nbash here\n");
            assertThat(shell.at("/result/output/2/stderr").asString()).isEqualTo("to stderr\n");
            assertThat(shell.at("/result/output/2/outcome/type").asString()).isEqualTo("exit");
            assertThat(shell.at("/result/output/2/outcome/exit_code").asInt()).isEqualTo(3);
            assertThat(shell.at("/content/0/text").asString()).contains("$ pwd;", "[exit 3]");
            JsonNode slow = json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name", Tools.SHELL,
                    "arguments", Map.of("session_id", id, "commands", List.of("sleep 30", "echo never"),
                            "timeout_ms", 500)))));
            assertThat(slow.at("/result/output/0/outcome/type").asString()).isEqualTo("timeout");
            assertThat(slow.at("/result/output/1/outcome/type").asString()).isEqualTo("timeout");
            assertThat(slow.at("/result/output/1/stdout").asString()).isEmpty();
            JsonNode none = json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name", Tools.SHELL,
                    "arguments", Map.of("session_id", id, "commands", List.of())))));
            assertThat(none.get("is_error").asBoolean()).isTrue();
            assertThat(none.at("/content/0/text").asString()).contains("'commands'");

            // Anthropic's bash: one shell whose directory and variables carry from call to call
            assertThat(bash(id, Map.of("command", "cd /tmp && export GREETING=hi && mkdir -p d")).at("/content/0/text")
                    .asString()).isEmpty();
            JsonNode kept = bash(id, Map.of("command", "pwd; echo $GREETING; echo oops >&2; false"));
            assertThat(kept.get("is_error").asBoolean()).isFalse();
            assertThat(kept.at("/result/output").asString()).isEqualTo("/tmp\nhi");
            assertThat(kept.at("/result/error").asString()).isEqualTo("oops");
            assertThat(kept.at("/result/exit_code").asInt()).isEqualTo(1);
            // a syntax error fails alone; a command cannot eat the next call's input; a forged sentinel is output
            assertThat(bash(id, Map.of("command", "echo 'unclosed")).at("/result/exit_code").asInt()).isNotZero();
            assertThat(bash(id, Map.of("command", "cat; echo __crucible_0 0; echo after")).at("/result/output")
                    .asString()).isEqualTo("__crucible_0 0\nafter");
            assertThat(bash(id, Map.of("command", "echo $GREETING")).at("/result/output").asString()).isEqualTo("hi");
            JsonNode exited = bash(id, Map.of("command", "exit 7"));
            assertThat(exited.get("is_error").asBoolean()).isTrue();
            assertThat(exited.at("/content/0/text").asString()).contains("returncode 7", "must be restarted");
            assertThat(bash(id, Map.of("command", "pwd")).at("/content/0/text").asString()).contains("must be restarted");
            assertThat(bash(id, Map.of("restart", true)).at("/content/0/text").asString())
                    .isEqualTo("tool has been restarted.");
            assertThat(bash(id, Map.of("command", "pwd; echo \"[$GREETING]\"")).at("/result/output").asString())
                    .isEqualTo("/workspace\n[]");
            assertThat(bash(id, Map.of()).at("/content/0/text").asString()).isEqualTo("no command provided.");

            // the editors reach the session's whole file system as its user, not only /workspace
            JsonNode elsewhere = tools.fromResponse(anthropic(Tools.TEXT_EDITOR, Map.of("command", "create", "path",
                    "/tmp/d/notes.txt", "file_text", "one\n"), Tools.TEXT_EDITOR, Map.of("command", "view", "path",
                    "/tmp/d"), Tools.TEXT_EDITOR, Map.of("command", "view", "path", "/etc/passwd"), Tools.TEXT_EDITOR,
                    Map.of("command", "create", "path", "/etc/crucible-planted", "file_text", "x"))).getFirst()
                    .get("content");
            assertThat(elsewhere.get(0).at("/content/0/text").asString())
                    .isEqualTo("File created successfully at: /tmp/d/notes.txt");
            assertThat(elsewhere.get(1).at("/content/0/text").asString()).endsWith(":\n/tmp/d/notes.txt");
            assertThat(elsewhere.get(2).at("/content/0/text").asString()).contains("/etc/passwd:", "\troot:x:0:0:");
            assertThat(elsewhere.get(3).get("is_error").asBoolean()).as("the user may not write /etc").isTrue();
            JsonNode patchedThere = json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name",
                    Tools.APPLY_PATCH, "arguments", Map.of("session_id", id, "operation", Map.of("type", "update_file",
                            "path", "/tmp/d/notes.txt", "diff", "@@\n-one\n+two\n"))))));
            assertThat(patchedThere.at("/result/status").asString()).as(patchedThere.toString()).isEqualTo("completed");
            assertThat(bash(id, Map.of("command", "cat /tmp/d/notes.txt; ls /etc/crucible-planted 2>&1 >/dev/null"
                    + " | wc -l")).at("/result/output").asString()).isEqualTo("two\n1");
        }
    }

    private static JsonNode bash(String session, Map<String, Object> arguments) throws Exception {
        Map<String, Object> args = new HashMap<>(arguments);
        args.put("session_id", session);
        return json(http.postJson("/v1/tools/call", JSON.writeValueAsString(Map.of("name", Tools.BASH,
                "arguments", args))));
    }

    @Test
    void badInputBecomesToolResultsNeverExceptions() throws Exception {
        CodeTools tools = CodeTools.of(crucible, Tools.Set.STATELESS);
        assertThat(tools.fromResponse(openai()).getFirst().get("content").asString()).contains("no tool call");
        assertThat(tools.fromResponse(anthropic()).getFirst().get("content").asString()).contains("no tool_use");
        assertThat(tools.fromResponse("{not json").getFirst().get("content").asString()).contains("not JSON");
        assertThat(tools.fromResponse("[1]").getFirst().get("content").asString()).contains("not a JSON object");
        List<ObjectNode> bad = tools.fromResponse(openai("rm_rf", "{}", "run_code", "{print(1)", "run_code",
                "{\"language\": \"python\"}", "run_code", "[1, 2]", "run_in_session", "{\"code\": \"1\"}"));
        assertThat(bad).extracting(m -> m.get("content").asString()).satisfiesExactly(
                m -> assertThat(m).startsWith("Error: ").contains("no tool named 'rm_rf'"),
                m -> assertThat(m).startsWith("Error: ").contains("not valid JSON"),
                m -> assertThat(m).startsWith("Error: ").contains("needs 'code'"),
                m -> assertThat(m).startsWith("Error: ").contains("must be a JSON object"),
                m -> assertThat(m).startsWith("Error: ").contains("no tool named 'run_in_session'")); // not in this set
        JsonNode missing = tools.fromResponse(anthropic("run_code", Map.of("cod", "print(1)"))).getFirst()
                .get("content").get(0);
        assertThat(missing.get("is_error").asBoolean()).isTrue();

        CodeTools offline = CodeTools.of(CrucibleClient.create(URI.create("http://127.0.0.1:9"), TOKEN),
                Tools.Set.STATELESS);
        assertThat(offline.fromResponse(openai("run_code", "{\"code\": \"print(1)\"}")).getFirst().get("content")
                .asString()).contains("connection_failed");

        // the route itself: the model's mistakes are 200 with is_error; a body without a tool name is the caller's
        JsonNode unknownSession = json(http.postJson("/v1/tools/call",
                "{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\", \"session_id\": \"" + "a".repeat(32) + "\"}}"));
        assertThat(unknownSession.get("is_error").asBoolean()).isTrue();
        assertThat(http.postJson("/v1/tools/call", "{\"arguments\": {}}").statusCode()).isEqualTo(400);
        JsonNode ran = json(http.postJson("/v1/tools/call", "{\"name\": \"run_code\", \"arguments\": \"{\\\"code\\\": \\\"print(5)\\\"}\"}"));
        assertThat(ran.at("/content/0/text").asString()).isEqualTo("5\n");
        assertThat(ran.at("/result/status").asString()).isEqualTo("ok");
    }

    /**
     * The Python client as a user gets it: {@code pip install ./clients/python} into a fresh venv (offline: no
     * dependency, the build from Debian's setuptools and wheel), then its pytest suite from that install.
     */
    @Test
    void pythonClientInstallsWithPipAndItsTestsPassAgainstThisServer(@TempDir Path venv)
            throws Exception {
        Path dir = Path.of("..", "clients", "python").toAbsolutePath().normalize();
        Path python = Path.of("/usr/bin/python3");
        assertThat(python).as("Python 3 is part of the machine's contract").isExecutable();
        String made = run(dir, python.toString(), "-m", "venv", "--system-site-packages", venv.toString());
        String installed = run(dir, venv.resolve("bin/python").toString(), "-m", "pip", "install", "--no-index",
                "--no-build-isolation", "--no-deps", "--disable-pip-version-check", dir.toString());
        assertThat(installed).as(made + installed).contains("Successfully installed crucible-client-0.1.0");
        String tests = run(venv, venv.resolve("bin/python").toString(), "-m", "pytest", "-v", "-p", "no:cacheprovider",
                dir.resolve("tests").toString()); // from the venv: the installed package, not the sources
        assertThat(tests).contains(" passed").doesNotContain("skipped").doesNotContain(" failed");
        try (var files = Files.walk(venv.resolve("lib"))) {
            assertThat(files.map(Path::toString)).as("a typed package").anyMatch(f -> f.endsWith("crucible_client/py.typed"));
        }
        Path example = Files.writeString(venv.resolve("example.py"), TypeScriptSdkTest.readmeExample("### Python",
                "python"));
        assertThat(run(venv, venv.resolve("bin/python").toString(), example.toString()))
                .as("the README's Python example, as a newcomer copies it").isEqualTo("42\n42\n");
    }

    /** Runs a command with the server's URL and token in its environment; its output, which must end in exit 0. */
    private static String run(Path dir, String... command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().put("CRUCIBLE_URL", http.base());
        pb.environment().put("CRUCIBLE_TOKEN", TOKEN);
        pb.environment().put("PIP_NO_INDEX", "1");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        System.out.println(out);
        assertThat(p.exitValue()).as(String.join(" ", command) + "\n" + out).isZero();
        return out;
    }
}
