package dev.crucible.eval.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.eval.Judge;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.image.store.TestImages;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The correctness that must hold on real benchmark data, through the real sandbox. */
class DatasetRunTest {

    /**
     * The limit of a run whose program is known to pass. A run's timeout is wall-clock time, and these suites run on
     * busy machines (a CPU hog on every core beside them, issue 25): a reference solution's verdict must not depend on
     * the load, so its limit is far above what it needs on a quiet machine. Runs meant to time out keep short limits.
     */
    static final long KNOWN_GOOD_MS = 60_000;

    /** The known-good stdio solutions include some that need about 10 s of CPU on a quiet machine. */
    static final long KNOWN_GOOD_STDIO_MS = 120_000;

    static final JsonMapper JSON = JsonMapper.builder().build();
    static DatasetRun runner;

    @BeforeAll
    static void start() {
        Crucible c = TestHost.crucible();
        c.startPool(Map.of("python", 4));
        runner = new DatasetRun(new Judge(c.executor()));
    }

    static DatasetRun.Summary humaneval(Path problems, Path samples, Path out, long timeoutMs, int concurrency)
            throws Exception {
        return runner.run(new DatasetRun.Options("humaneval", problems, samples, List.of(1), out, concurrency, timeoutMs),
                DatasetRun.Progress.NONE, new ArrayList<>());
    }

    @Test
    void aDatasetRunsInAnImage(@TempDir Path dir) throws Exception {
        TestImages.debianPython(TestHost.images());
        Path problems = dir.resolve("problems.jsonl");
        Files.writeString(problems, JSON.writeValueAsString(Map.of("task_id", "t/0", "prompt", "def f():\n",
                "test", "def check(c):\n    assert c() == 'tabulate'\n", "entry_point", "f")) + "\n");
        Path samples = dir.resolve("samples.jsonl");
        Files.writeString(samples, JSON.writeValueAsString(Map.of("task_id", "t/0",
                "completion", "    import tabulate\n    return tabulate.__name__\n")) + "\n");
        DatasetRun.Summary inImage = runner.run(new DatasetRun.Options("humaneval", problems, samples, List.of(1),
                dir.resolve("image.jsonl"), 2, 10_000, TestImages.DEBIAN_PYTHON),
                DatasetRun.Progress.NONE, new ArrayList<>());
        assertThat(inImage.passed()).as("the sample imports what only the image has").isEqualTo(1);
        DatasetRun.Summary onHost = runner.run(new DatasetRun.Options("humaneval", problems, samples, List.of(1),
                dir.resolve("host.jsonl"), 2, 10_000), DatasetRun.Progress.NONE, new ArrayList<>());
        assertThat(onHost.passed()).as("the host has no tabulate").isZero();
    }

    @Test
    void referencesPassEmptyBodiesFailAndTimeoutsAreTimeouts(@TempDir Path dir) throws Exception {
        DatasetRun.Summary ref = humaneval(data("HumanEval.jsonl.gz"), null, dir.resolve("ref.jsonl"), KNOWN_GOOD_MS, 4);
        assertThat(ref.passed()).isEqualTo(164);
        Path samples = dir.resolve("pass.jsonl");
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < 164; i++) {
            lines.add(JSON.writeValueAsString(Map.of("task_id", "HumanEval/" + i, "completion", "    pass\n")));
        }
        Files.write(samples, lines);
        assertThat(humaneval(data("HumanEval.jsonl.gz"), samples, dir.resolve("pass-out.jsonl"), 10_000, 4).passed())
                .isZero();
        DatasetRun.Summary example = humaneval(data("example_problem.jsonl"), data("example_samples.jsonl"),
                dir.resolve("example.jsonl"), 3_000, 1);
        assertThat(example.passed()).isEqualTo(3);
        assertThat(lines(dir.resolve("example.jsonl")).stream().filter(n -> n.has("result"))
                .map(n -> n.get("result").asString())).contains("timed out", "passed");
    }

    /** Each sample is a sandbox of its own (a zygote's child): nothing one leaves (processes, files) reaches the next. */
    @Test
    void nothingOfOneSampleReachesTheNext(@TempDir Path dir) throws Exception {
        Path problems = dir.resolve("problems.jsonl");
        Files.writeString(problems, JSON.writeValueAsString(Map.of("task_id", "t/0", "prompt", "def f():\n",
                "test", "def check(c):\n    assert c() == 1\n", "entry_point", "f")) + "\n");
        String plant = "    import subprocess, os\n"
                + "    subprocess.Popen(['sleep', '100'], start_new_session=True)\n"
                + "    open('/tmp/planted', 'w').write('x'); open('/workspace/planted', 'w').write('x')\n"
                + "    return 1\n";
        String inspect = "    import os\n"
                + "    others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]\n"
                + "    clean = not others and not os.path.exists('/tmp/planted') and not os.path.exists('/workspace/planted')\n"
                + "    return 1 if clean else (others, os.listdir('/tmp'))\n";
        String killParent = "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 1\n";
        List<String> samples = new ArrayList<>();
        for (String completion : List.of(plant, inspect, plant, killParent, inspect, "    return 1\n")) {
            samples.add(JSON.writeValueAsString(Map.of("task_id", "t/0", "completion", completion)));
        }
        Files.write(dir.resolve("samples.jsonl"), samples);
        DatasetRun.Summary s = humaneval(problems, dir.resolve("samples.jsonl"), dir.resolve("out.jsonl"), 5_000, 1);
        List<JsonNode> out = lines(dir.resolve("out.jsonl")).stream().filter(n -> n.has("sample")).toList();
        assertThat(out).hasSize(6);
        Map<Integer, Boolean> passed = out.stream().collect(Collectors.toMap(n -> n.get("sample").asInt(),
                n -> n.get("passed").asBoolean()));
        assertThat(passed).as(out.toString()).containsEntry(0, true).containsEntry(1, true).containsEntry(2, true)
                .containsEntry(4, true).containsEntry(5, true);
        assertThat(s.samples()).isEqualTo(6);
    }

    static Path data(String name) throws URISyntaxException {
        return Path.of(DatasetRunTest.class.getResource("/data/" + name).toURI());
    }

    static DatasetRun.Summary run(String format, Path problems, Path samples, Path out, long timeoutMs, List<Integer> ks)
            throws Exception {
        return runner.run(new DatasetRun.Options(format, problems, samples, ks, out, 4, timeoutMs),
                DatasetRun.Progress.NONE, new ArrayList<>());
    }

    static List<JsonNode> lines(Path out) throws IOException {
        List<JsonNode> nodes = new ArrayList<>();
        for (String line : Files.readAllLines(out)) {
            nodes.add(JSON.readTree(line));
        }
        return nodes;
    }

    @Test
    void humanEvalReferenceSolutionsAllPassAndPassBodiesNone(@TempDir Path dir) throws Exception {
        DatasetRun.Summary ref = run("humaneval", data("HumanEval.jsonl.gz"), null, dir.resolve("ref.jsonl"), KNOWN_GOOD_MS,
                List.of(1));
        assertThat(ref.samples()).isEqualTo(164);
        assertThat(ref.passed()).isEqualTo(164);
        assertThat(ref.passAtK()).containsEntry("pass@1", 1.0);
        List<JsonNode> out = lines(dir.resolve("ref.jsonl"));
        assertThat(out).hasSize(165); // one line per sample, then the summary
        assertThat(out.getLast().has("summary")).isTrue();

        // the negative control: every body replaced by `pass`
        Path samples = dir.resolve("pass.jsonl");
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < 164; i++) {
            lines.add(JSON.writeValueAsString(Map.of("task_id", "HumanEval/" + i, "completion", "    pass\n")));
        }
        Files.write(samples, lines);
        DatasetRun.Summary none = run("humaneval", data("HumanEval.jsonl.gz"), samples, dir.resolve("pass-out.jsonl"),
                10_000, List.of(1));
        assertThat(none.samples()).isEqualTo(164);
        assertThat(none.passed()).isZero();
    }

    @Test
    void humanEvalsOwnExampleGivesPassAt1OfOneHalf(@TempDir Path dir) throws Exception {
        DatasetRun.Summary s = run("humaneval", data("example_problem.jsonl"), data("example_samples.jsonl"),
                dir.resolve("out.jsonl"), 3_000, List.of(1, 2, 10));
        assertThat(s.samples()).isEqualTo(6);
        assertThat(s.passed()).isEqualTo(3);
        assertThat(s.passAtK()).containsOnlyKeys("pass@1", "pass@2"); // 6 samples: no pass@10
        assertThat(s.passAtK().get("pass@1")).isCloseTo(0.5, within(1e-12));
        Set<String> results = lines(dir.resolve("out.jsonl")).stream().filter(n -> n.has("result"))
                .map(n -> n.get("result").asString()).collect(Collectors.toSet());
        assertThat(results).contains("passed", "timed out");
    }

    @Test
    void mbppReferenceSolutionsAllPass(@TempDir Path dir) throws Exception {
        DatasetRun.Summary s = run("mbpp", data("mbpp.jsonl"), null, dir.resolve("out.jsonl"), KNOWN_GOOD_MS, List.of(1));
        assertThat(s.samples()).isEqualTo(974);
        assertThat(s.passed()).isEqualTo(974);
    }

    @Test
    void theKnownGoodStdioSolutionsAllPass(@TempDir Path dir) throws Exception {
        JsonNode reference;
        try (InputStream in = Files.newInputStream(data("reference_check_local.json"))) {
            reference = JSON.readTree(in).get("problems");
        }
        Set<String> good = new TreeSet<>();
        reference.properties().forEach(e -> {
            if (e.getValue().get("status").asString().equals("pass_exact")) {
                good.add(e.getKey());
            }
        });
        assertThat(good).hasSize(227);
        Path subset = dir.resolve("good.jsonl");
        List<String> kept = Files.readAllLines(data("codecontests_300_stdio.jsonl"), StandardCharsets.UTF_8).stream()
                .filter(l -> good.contains(JSON.readTree(l).get("id").asString())).toList();
        Files.write(subset, kept);
        DatasetRun.Summary s = run("stdio", subset, null, dir.resolve("out.jsonl"), KNOWN_GOOD_STDIO_MS, List.of(1));
        List<String> failed = lines(dir.resolve("out.jsonl")).stream()
                .filter(n -> n.has("passed") && !n.get("passed").asBoolean()).map(JsonNode::toString).toList();
        assertThat(failed).isEmpty();
        assertThat(s.passed()).isEqualTo(227);
    }

    /**
     * A sandbox error is the sandbox's failure, never the program's: the sample is judged again (its run is stateless),
     * up to three times; a program that forges one (it prints what bwrap's set-up error looks like) gets the same
     * verdict each time and is then failed with it, never left unjudged (an unjudged sample is out of pass@k).
     */
    @Test
    void aSampleWhoseSandboxFailedIsJudgedAgainAndAForgedFailureEndsFailed(@TempDir Path dir) throws Exception {
        Path samples = dir.resolve("samples.jsonl");
        Files.write(samples, List.of(JSON.writeValueAsString(Map.of("task_id", "test/0", "completion",
                "    import sys\n    sys.stderr.write('bwrap: forged set-up failure\\n')\n    sys.exit(1)\n"))));
        AtomicInteger runs = new AtomicInteger();
        Sandboxes real = Sandboxes.local(new Judge(TestHost.crucible().executor()), 2);
        Sandboxes counted = new Sandboxes() { // the real engine, each request counted
            @Override
            public ExecuteResult execute(ExecuteRequest request)
                    throws InterruptedException, NoVerdict {
                runs.incrementAndGet();
                return real.execute(request);
            }

            @Override
            public Judge.Result evaluate(Judge.Request request) throws InterruptedException, NoVerdict {
                runs.incrementAndGet();
                return real.evaluate(request);
            }

            @Override
            public int concurrency() {
                return real.concurrency();
            }
        };
        List<DatasetRun.Unjudged> unjudged = new ArrayList<>();
        DatasetRun.Summary s = new DatasetRun(counted).run(new DatasetRun.Options("humaneval", data("example_problem.jsonl"),
                samples, List.of(1), dir.resolve("out.jsonl"), 2, 5_000), DatasetRun.Progress.NONE, new ArrayList<>(),
                unjudged);
        assertThat(runs.get()).as("judged again while the sandbox error lasted").isEqualTo(DatasetRun.SANDBOX_ERROR_TRIES);
        assertThat(unjudged).isEmpty();
        assertThat(s.passed()).isZero();
        JsonNode line = lines(dir.resolve("out.jsonl")).getFirst();
        assertThat(line.get("status").asString()).isEqualTo("sandbox_error");
        assertThat(line.get("result").asString()).startsWith("failed: sandbox_error: bwrap: forged");
    }

    @Test
    void aSecondRunResumesAndMalformedLinesAreCountedNotFatal(@TempDir Path dir) throws Exception {
        Path samples = dir.resolve("samples.jsonl");
        Files.write(samples, List.of(
                "{\"task_id\": \"test/0\", \"completion\": \"    return 1\"}",
                "{\"task_id\": \"test/0\", \"completion\": ",
                "{\"task_id\": \"nope/1\", \"completion\": \"    return 1\"}",
                "[1, 2]",
                "{\"task_id\": \"test/0\", \"completion\": \"    return 2\"}",
                "{\"task_id\": \"test/0\", \"completion\": \"    while True: pass\"}"));
        Path out = dir.resolve("out.jsonl");
        // as if a first run was killed after one sample, in the middle of writing the second line
        Files.writeString(out, "{\"task_id\":\"test/0\",\"sample\":0,\"passed\":true,\"status\":\"ok\",\"result\":\"passed\","
                + "\"wall_ms\":5}\n{\"task_id\":\"test/0\",\"sam");
        List<Dataset.Malformed> malformed = new ArrayList<>();
        DatasetRun.Summary s = runner.run(new DatasetRun.Options("humaneval", data("example_problem.jsonl"), samples,
                List.of(1), out, 2, 2_000), DatasetRun.Progress.NONE, malformed);
        assertThat(malformed).extracting(Dataset.Malformed::line).containsExactly(2, 3, 4);
        assertThat(malformed.get(1).reason()).contains("unknown task_id");
        assertThat(s.malformed()).isEqualTo(3);
        assertThat(s.resumed()).isEqualTo(1);
        assertThat(s.ran()).isEqualTo(2);
        assertThat(s.samples()).isEqualTo(3);
        assertThat(s.passed()).isEqualTo(1);
        List<JsonNode> written = lines(out); // the cut line is gone: one line per sample, then the summary
        assertThat(written).hasSize(4);
        assertThat(written.stream().filter(n -> n.has("result")).map(n -> n.get("result").asString()))
                .containsExactlyInAnyOrder("passed", "failed: AssertionError", "timed out");
        // a third run finds everything done
        DatasetRun.Summary again = runner.run(new DatasetRun.Options("humaneval", data("example_problem.jsonl"), samples,
                List.of(1), out, 2, 2_000), DatasetRun.Progress.NONE, new ArrayList<>());
        assertThat(again.ran()).isZero();
        assertThat(again.passed()).isEqualTo(1);
    }

    @Test
    void multiplEProgramsAreAssembledAndTheirTestsReallyAssert(@TempDir Path dir) throws Exception {
        // the data README's negative control for js: every body `return undefined;}` fails
        Path samples = dir.resolve("undefined.jsonl");
        List<String> lines = new ArrayList<>();
        for (String l : new String(new GZIPInputStream(Files.newInputStream(data("humaneval-js.jsonl.gz")))
                .readAllBytes(), StandardCharsets.UTF_8).lines().toList()) {
            lines.add(JSON.writeValueAsString(Map.of("task_id", JSON.readTree(l).get("name").asString(),
                    "completion", "  return undefined;\n}\nfunction leftover() {}\n")));
        }
        Files.write(samples, lines);
        DatasetRun.Summary none = run("multipl-e", data("humaneval-js.jsonl.gz"), samples, dir.resolve("js.jsonl"),
                10_000, List.of(1));
        assertThat(none.samples()).isEqualTo(161);
        assertThat(none.passed()).isZero();
        // real completions pass, in JavaScript and C++ (the completion is cut at the first stop token)
        Files.write(dir.resolve("good-js.jsonl"), List.of(JSON.writeValueAsString(Map.of("task_id", "HumanEval_23_strlen",
                "completion", "  return string.length;\n}\nconsole.log('cut here')\n"))));
        Path jsOne = dir.resolve("strlen.jsonl");
        Files.write(jsOne, Files.readAllLines(dir.resolve("good-js.jsonl")));
        DatasetRun.Summary js = run("multipl-e", data("humaneval-js.jsonl.gz"), jsOne, dir.resolve("js-good.jsonl"),
                KNOWN_GOOD_MS, List.of(1));
        assertThat(js.passed()).isEqualTo(1);
        Path cppOne = dir.resolve("cpp.jsonl");
        Files.write(cppOne, List.of(JSON.writeValueAsString(Map.of("task_id", "HumanEval_23_strlen",
                "completion", "    return string.size();\n}\n"))));
        DatasetRun.Summary cpp = run("multipl-e", data("humaneval-cpp.jsonl.gz"), cppOne, dir.resolve("cpp-out.jsonl"),
                KNOWN_GOOD_MS, List.of(1));
        assertThat(cpp.passed()).as(Files.readString(dir.resolve("cpp-out.jsonl"))).isEqualTo(1);
    }
}
