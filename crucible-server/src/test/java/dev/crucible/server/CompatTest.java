package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Piston v2, SandboxFusion and Replit code-exec requests, as their clients send them, against the real SERVER.server(). */
class CompatTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));

    /** As piston-client sends it: JSON, but with no JSON content type. */
    static HttpResponse<String> raw(String path, String body) throws Exception {
        return SERVER.http().send(HttpRequest.newBuilder(URI.create(SERVER.http().base() + path)).header("Content-Type", "text/plain")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    @Test
    void pistonRuntimesAndExecute() throws Exception {
        JsonNode runtimes = JSON.readTree(SERVER.http().get("/api/v2/runtimes").body());
        assertThat(runtimes.findValuesAsString("language")).contains("python", "c++", "javascript");
        JsonNode r = JSON.readTree(raw("/api/v2/execute", """
                {"language": "python", "version": "*", "files": [{"name": "main.py", "content": "import sys\\nprint(input(), sys.argv[1:])\\nsys.exit(3)"}],
                 "stdin": "hi", "args": ["a"], "run_timeout": 3000}""").body());
        assertThat(r.get("language").asString()).isEqualTo("python");
        assertThat(r.get("run").get("stdout").asString()).isEqualTo("hi ['a']\n");
        assertThat(r.get("run").get("code").asInt()).isEqualTo(3);
        assertThat(r.get("run").get("status").asString()).isEqualTo("RE");
        JsonNode cpp = JSON.readTree(raw("/api/v2/execute", """
                {"language": "c++", "version": "*", "files": [{"content": "int main( {"}]}""").body());
        assertThat(cpp.get("compile").get("code").asInt()).isNotZero();
        assertThat(cpp.get("compile").get("stderr").asString()).contains("error");
        JsonNode slow = JSON.readTree(raw("/api/v2/execute", """
                {"language": "python", "version": "*", "files": [{"content": "while True: pass"}], "run_timeout": 500}""").body());
        assertThat(slow.get("run").get("status").asString()).isEqualTo("TO");
        assertThat(slow.get("run").get("signal").asString()).isEqualTo("SIGKILL");
        assertThat(raw("/api/v2/execute", "{\"language\": \"python\", \"version\": \"1.0\", \"files\": [{\"content\": \"1\"}]}")
                .statusCode()).isEqualTo(400);
        assertThat(raw("/api/v2/execute", "not json").statusCode()).isEqualTo(400);
    }

    @Test
    void sandboxFusionRunCodeAsVerlSendsIt() throws Exception {
        JsonNode ok = JSON.readTree(SERVER.http().postJson("/run_code", """
                {"code": "print(open('data.txt').read().upper())", "language": "python", "stdin": "",
                 "compile_timeout": 10, "run_timeout": 5, "memory_limit_MB": 256,
                 "files": {"data.txt": "aGVsbG8="}, "fetch_files": []}""").body());
        assertThat(ok.get("status").asString()).isEqualTo("Success");
        assertThat(ok.get("run_result").get("status").asString()).isEqualTo("Finished");
        assertThat(ok.get("run_result").get("stdout").asString()).isEqualTo("HELLO\n");
        assertThat(ok.get("run_result").get("return_code").asInt()).isZero();
        JsonNode slow = JSON.readTree(SERVER.http().postJson("/run_code",
                "{\"code\": \"while True: pass\", \"language\": \"python\", \"run_timeout\": 0.5}").body());
        assertThat(slow.get("status").asString()).isEqualTo("Failed");
        assertThat(slow.get("run_result").get("status").asString()).isEqualTo("TimeLimitExceeded");
        JsonNode js = JSON.readTree(SERVER.http().postJson("/run_code",
                "{\"code\": \"console.log(1 + 1)\", \"language\": \"nodejs\"}").body());
        assertThat(js.get("run_result").get("stdout").asString()).isEqualTo("2\n");
        JsonNode unknown = JSON.readTree(SERVER.http().postJson("/run_code", "{\"code\": \"x\", \"language\": \"cobol\"}").body());
        assertThat(unknown.get("status").asString()).isEqualTo("SandboxError");
    }

    static JsonNode piston(String body) throws Exception {
        return JSON.readTree(raw("/api/v2/execute", body).body());
    }

    /** A Piston validation error: 400 and Piston's own {"message": …} body (engineer-man/piston api/src/api/v2.js). */
    static void assertPistonError(String body, String message) throws Exception {
        HttpResponse<String> r = raw("/api/v2/execute", body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        JsonNode error = JSON.readTree(r.body());
        assertThat(error.get("message").asString()).isEqualTo(message);
        assertThat(error.has("error")).isFalse();
    }

    /** Files as Piston's api/src/job.js lays them out: each keeps its name; an unnamed one is file<i>.code. */
    @Test
    void pistonFilesKeepTheirNames() throws Exception {
        JsonNode r = piston("""
                {"language": "python", "version": "*", "files": [
                  {"name": "main.py", "content": "import sys, helper\\nprint(sys.argv[0], helper.X, open('file2.code').read())\\n1/0"},
                  {"name": "helper.py", "content": "X = 42"},
                  {"content": "unnamed"}]}""");
        assertThat(r.get("run").get("stdout").asString()).as(r.toString()).isEqualTo("main.py 42 unnamed\n");
        assertThat(r.get("run").get("stderr").asString()).contains("main.py\", line 3").contains("ZeroDivisionError");
        // the first utf8 file is the program, wherever it is
        JsonNode c = piston("""
                {"language": "c", "version": "*", "files": [{"name": "data.bin", "content": "AAE=", "encoding": "base64"},
                  {"name": "prog.c", "content": "int main(void) { return undefined_name; }"}]}""");
        assertThat(c.get("compile").get("stderr").asString()).as(c.toString()).contains("prog.c");
        assertThat(c.has("run")).as("no run after a failed compile").isFalse();
        assertThat(c.get("compile").get("code").asInt()).isNotZero();
    }

    @Test
    void pistonOutputIsInterleavedAndOverflowsAreNamedPerStream() throws Exception {
        JsonNode r = piston("""
                {"language": "python", "version": "*", "files": [{"content":
                 "import sys, time\\nfor s, t in ((sys.stdout, 'a'), (sys.stderr, 'b'), (sys.stdout, 'c'), (sys.stderr, 'd')):\\n    s.write(t + '\\\\n'); s.flush(); time.sleep(0.05)"}]}""");
        assertThat(r.get("run").get("output").asString()).as(r.toString()).isEqualTo("a\nb\nc\nd\n");
        assertThat(r.get("run").get("stdout").asString()).isEqualTo("a\nc\n");

        JsonNode err = piston("""
                {"language": "python", "version": "*", "files": [{"content": "import sys\\nsys.stderr.write('e' * 10_000_000)"}]}""");
        assertThat(err.get("run").get("status").asString()).as(err.toString()).isEqualTo("EL");
        assertThat(err.get("run").get("message").asString()).isEqualTo("stderr length exceeded");
        assertThat(err.get("run").get("signal").asString()).isEqualTo("SIGKILL");
        assertThat(err.get("run").get("code").isNull()).isTrue();
        JsonNode out = piston("""
                {"language": "python", "version": "*", "files": [{"content": "print('o' * 10_000_000)"}]}""");
        assertThat(out.get("run").get("status").asString()).isEqualTo("OL");
        assertThat(out.get("run").get("message").asString()).isEqualTo("stdout length exceeded");
    }

    @Test
    void pistonValidatesAsPistonDoes() throws Exception {
        assertPistonError("{\"version\": \"*\", \"files\": [{\"content\": \"1\"}]}", "language is required as a string");
        assertPistonError("{\"language\": \"python\", \"files\": [{\"content\": \"1\"}]}", "version is required as a string");
        assertPistonError("{\"language\": \"python\", \"version\": \"*\"}", "files is required as an array");
        assertPistonError("{\"language\": \"python\", \"version\": \"*\", \"files\": [{\"content\": 1}]}",
                "files[0].content is required as a string");
        assertPistonError("{\"language\": \"cobol\", \"version\": \"*\", \"files\": [{\"content\": \"1\"}]}",
                "cobol-* runtime is unknown");
        assertPistonError("{\"language\": \"python\", \"version\": \"*\", \"files\": [{\"content\": \"MQ==\", "
                + "\"encoding\": \"base64\"}]}", "files must include at least one utf8 encoded file");
        assertPistonError("{\"language\": \"python\", \"version\": \"*\", \"files\": [{\"content\": \"1\", "
                + "\"encoding\": \"ebcdic\"}]}", "files must include at least one utf8 encoded file");
        assertPistonError("{\"language\": \"python\", \"version\": \"*\", \"files\": [{\"content\": \"1\"}], "
                + "\"run_timeout\": \"soon\"}", "If specified, run_timeout must be a number");
        assertPistonError("{\"language\": \"python\", \"version\": \"*\", \"files\": [{\"content\": \"1\"}], "
                + "\"compile_memory_limit\": -5}", "compile_memory_limit must be non-negative");
        HttpResponse<String> notJson = raw("/api/v2/execute", "not json");
        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(notJson.body()).has("message")).isTrue();
    }

    /**
     * Java runs with assertions on, as SandboxFusion's runner does ({@code java -cp … -ea Main} in
     * bytedance/SandboxFusion sandbox/runners/major.py, run_java): a test suite written with {@code assert} must not
     * pass vacuously on any route.
     */
    @Test
    void javaAssertsAreCheckedOnEveryRoute() throws Exception {
        String failing = "public class Main { public static void main(String[] a) { assert 1 == 2 : \"one is not two\";"
                + " System.out.println(\"unreachable\"); } }";
        JsonNode execute = JSON.readTree(SERVER.http().postJson("/v1/execute", JSON.writeValueAsString(
                Map.of("language", "java", "code", failing))).body());
        assertThat(execute.get("status").asString()).as(execute.toString()).isEqualTo("runtime_error");
        assertThat(execute.get("stderr").asString()).contains("AssertionError: one is not two");
        assertThat(execute.get("stdout").asString()).isEmpty();

        JsonNode fusion = JSON.readTree(SERVER.http().postJson("/run_code", JSON.writeValueAsString(
                Map.of("language", "java", "code", failing))).body());
        assertThat(fusion.get("status").asString()).isEqualTo("Failed");
        assertThat(fusion.get("run_result").get("return_code").asInt()).isEqualTo(1);

        JsonNode piston = JSON.readTree(raw("/api/v2/execute", JSON.writeValueAsString(Map.of(
                "language", "java", "version", "*", "files", List.of(Map.of("content", failing))))).body());
        assertThat(piston.get("run").get("code").asInt()).as(piston.toString()).isEqualTo(1);
        assertThat(piston.get("run").get("stderr").asString()).contains("AssertionError");

        JsonNode passing = JSON.readTree(SERVER.http().postJson("/v1/execute", JSON.writeValueAsString(Map.of(
                "language", "java", "code", failing.replace("1 == 2", "1 == 1")))).body());
        assertThat(passing.get("stdout").asString()).isEqualTo("unreachable\n");
    }

    @Test
    void replitEvalAnswersPlainText() throws Exception {
        HttpResponse<String> r = SERVER.http().postJson("/replit/eval", "{\"code\": \"print('hi')\\nimport sys\\nprint('e', file=sys.stderr)\"}");
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
        assertThat(r.body()).isEqualTo("hi\ne\n");
        assertThat(SERVER.http().postJson("/replit/eval", "{\"code\": \"x = 2\\nx * 21\\n'done'\", \"interpreter_mode\": true}").body())
                .isEqualTo("42\n'done'\n");
        assertThat(SERVER.http().postJson("/replit/eval", "{\"code\": \"print(open('f.txt').read())\", \"files\": {\"f.txt\": \"content\"}}")
                .body()).isEqualTo("content\n");
        assertThat(SERVER.http().postJson("/replit/eval", "{}").statusCode()).isEqualTo(400);
    }

    @Test
    void pistonClientFromNpmWorksUnchanged() throws Exception {
        Path dir = Path.of("..", "clients", "node-tests").toAbsolutePath().normalize();
        Capability.NPM_CLIENTS.require(Files.isDirectory(dir.resolve("node_modules/piston-client"))
                ? null : dir + "/node_modules/piston-client is missing (npm ci there; ./run-tests does)");
        Process node = new ProcessBuilder("node", "piston.mjs", SERVER.http().base()).directory(dir.toFile())
                .redirectErrorStream(true).start();
        String out = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(node.waitFor()).as(out).isZero();
        JsonNode r = JSON.readTree(out);
        assertThat(r.get("runtimes").findValuesAsString("language")).contains("python", "c++");
        assertThat(r.get("hello").get("run").get("stdout").asString())
                .isEqualTo("hello from piston-client ['1', '2', '3']\n"); // the client's default args
        assertThat(r.get("stdin").get("run").get("stdout").asString()).isEqualTo("SHOUT\n");
        assertThat(r.get("cpp").get("run").get("stdout").asString()).isEqualTo("42\n");
        assertThat(r.get("cpp").get("compile").get("code").asInt()).isZero();
    }
}
