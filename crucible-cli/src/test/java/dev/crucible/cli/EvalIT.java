package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.cli.support.ExitCodes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** {@code crucible eval …} and {@code crucible reward} as a user runs them: the JAR in its own JVM. */
class EvalIT {
    static final JsonMapper JSON = JsonMapper.builder().build();

    static Path resource(String name) throws Exception {
        return Path.of(EvalIT.class.getResource("/" + name).toURI());
    }

    static List<JsonNode> sampleLines(Path out) throws Exception {
        List<JsonNode> lines = new ArrayList<>();
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            JsonNode n = JSON.readTree(line); // every line kept is whole JSON
            if (n.has("task_id")) {
                lines.add(n);
            }
        }
        return lines;
    }

    @Test
    void aDatasetRunKilledWithDashNineLosesNothingAndResumes(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("results.jsonl");
        List<String> argv = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-jar", CliIT.JAR.toAbsolutePath().toString(), "eval", "dataset",
                "--format", "humaneval", "--problems", resource("HumanEval.jsonl.gz").toString(), "--out", out.toString(),
                "--k", "1", "-c", "2", "--timeout-ms", "60000"); // references pass whatever the load (wall time)
        Process first = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        await("30 results written").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(20))
                .until(() -> Files.exists(out) && Files.readAllLines(out).size() >= 30);
        first.destroyForcibly(); // kill -9 in the middle of the run
        assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
        await("the killed run's sandboxes gone").atMost(Duration.ofSeconds(30)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(50)).until(() -> ServeIT.slotProcesses() == 0);
        String text = Files.readString(out);
        int whole = (int) text.lines().filter(l -> {
            try {
                return JSON.readTree(l).has("task_id");
            } catch (RuntimeException e) {
                return false; // the line being written when it died
            }
        }).count();
        assertThat(whole).isBetween(30, 163);

        CliIT.Outcome again = CliIT.crucible(dir, "eval", "dataset", "--format", "humaneval", "--problems",
                resource("HumanEval.jsonl.gz").toString(), "--out", out.toString(), "--k", "1", "--timeout-ms", "60000");
        assertThat(again.exit()).as(again.stderr()).isZero();
        JsonNode summary = JSON.readTree(again.stdout()).get("summary");
        assertThat(summary.get("resumed").asInt()).isEqualTo(whole);
        assertThat(summary.get("ran").asInt()).isEqualTo(164 - whole);
        assertThat(summary.get("passed").asInt()).isEqualTo(164);
        assertThat(summary.get("pass_at_k").get("pass@1").asDouble()).isEqualTo(1.0);
        List<JsonNode> lines = sampleLines(out);
        assertThat(lines).hasSize(164);
        assertThat(lines.stream().map(n -> n.get("task_id").asString()).distinct().count()).isEqualTo(164);
        assertThat(again.stderr()).contains("164/164 samples, 164 passed");
    }

    @Test
    void urlShardAndMergeMistakesAreOneLineWithTheirOwnExitCodes(@TempDir Path dir) throws Exception {
        String problems = resource("HumanEval.jsonl.gz").toString();
        CliIT.Outcome shard = CliIT.crucible(dir, "eval", "dataset", "--format", "humaneval", "--problems", problems,
                "--out", "o.jsonl", "--shard", "4/4");
        assertThat(shard.exit()).isEqualTo(ExitCodes.USAGE);
        CliIT.assertOneLineError(shard, "--shard is I/N with 0 <= I < N (I counts from 0)");
        CliIT.Outcome runtimes = CliIT.crucible(dir, "eval", "dataset", "--format", "humaneval", "--problems", problems,
                "--out", "o.jsonl", "--url", "http://127.0.0.1:9", "--runtimes", problems);
        assertThat(runtimes.exit()).isEqualTo(ExitCodes.USAGE);
        CliIT.assertOneLineError(runtimes, "--runtimes is for local runs");
        CliIT.Outcome mode = CliIT.crucible(dir, "eval", "dataset", "--format", "humaneval", "--problems", problems,
                "--out", "o.jsonl", "--isolation", "shared");
        assertThat(mode.exit()).isEqualTo(ExitCodes.USAGE);
        CliIT.assertOneLineError(mode, "--isolation is sample (every sample in a sandbox of its own)");
        CliIT.Outcome down = CliIT.crucible(dir, "eval", "dataset", "--format", "humaneval", "--problems", problems,
                "--out", "o.jsonl", "--url", "http://127.0.0.1:9");
        assertThat(down.exit()).isEqualTo(ExitCodes.ENDPOINT_UNREACHABLE);
        CliIT.assertOneLineError(down, "http://127.0.0.1:9: /healthz: no answer after 3 attempts (last: connection refused)");
        assertThat(dir.resolve("o.jsonl")).doesNotExist();

        String line = "{\"task_id\":\"HumanEval/0\",\"sample\":0,\"passed\":true,\"status\":\"ok\",\"result\":\"passed\",\"wall_ms\":1}";
        Files.writeString(dir.resolve("a.jsonl"), line + "\n");
        Files.writeString(dir.resolve("b.jsonl"), line.replace("true", "false").replace("\"passed\",", "\"failed: x\",") + "\n");
        CliIT.Outcome conflict = CliIT.crucible(dir, "eval", "merge", "m.jsonl", "a.jsonl", "b.jsonl");
        assertThat(conflict.exit()).isEqualTo(ExitCodes.MERGE_REFUSED);
        CliIT.assertOneLineError(conflict, "not merged: HumanEval/0 sample 0 has two verdicts");
        CliIT.Outcome missing = CliIT.crucible(dir, "eval", "merge", "m.jsonl", "a.jsonl", "--format", "humaneval",
                "--problems", problems);
        assertThat(missing.exit()).isEqualTo(ExitCodes.MERGE_REFUSED);
        CliIT.assertOneLineError(missing, "163 of the dataset's 164 samples are in no input");
        assertThat(dir.resolve("m.jsonl")).doesNotExist();
        CliIT.Outcome merged = CliIT.crucible(dir, "eval", "merge", "m.jsonl", "a.jsonl", "a.jsonl", "--k", "1");
        assertThat(merged.exit()).as(merged.stderr()).isZero();
        assertThat(JSON.readTree(merged.stdout()).get("summary").get("overlaps").asInt()).isEqualTo(1);
    }

    @Test
    void theCodexRunnerWorkflowRunsTestsAndWritesTheCsv(@TempDir Path dir) throws Exception {
        CliIT.Outcome tested = CliIT.crucible(dir, "eval", "run-tests", resource("readme_example_v2_full.toml").toString(),
                "tested.toml");
        assertThat(tested.exit()).as(tested.stderr()).isZero();
        assertThat(tested.stderr()).as(() -> tested.stderr() + readQuietly(dir.resolve("tested.toml")))
                .contains("2 of 2 tests passed");
        assertThat(Files.readString(dir.resolve("tested.toml"))).contains("[[questions.completions.test_results]]")
                .contains("got = 'Hello, James!'");
        CliIT.Outcome csv = CliIT.crucible(dir, "eval", "write-results", "tested.toml", "results.csv");
        assertThat(csv.exit()).isZero();
        assertThat(Files.readString(dir.resolve("results.csv")))
                .startsWith("question,completion_1,mean,median,stdev,min,max\ngreeting,1.0000,");
        // Codex Runner's own names for the steps (its codex_runner.py: gen, test, summary) and its strategies
        CliIT.Outcome again = CliIT.crucible(dir, "eval", "test", "tested.toml", "tested2.toml");
        assertThat(again.exit()).as(again.stderr()).isZero();
        CliIT.Outcome summary = CliIT.crucible(dir, "eval", "summary", "tested2.toml", "summary.csv", "--test-strat",
                "fuzzy", "--scoring-strat", "all-or-nothing");
        assertThat(summary.exit()).as(summary.stderr()).isZero();
        assertThat(Files.readString(dir.resolve("summary.csv")))
                .isEqualTo("qid,response 1,average,median,stdev,min,max\r\ngreeting,1.0000,1.0000,1.0000,,1.0000,1.0000\r\n");
        CliIT.assertOneLineError(CliIT.crucible(dir, "eval", "summary", "tested2.toml", "s.csv", "--test-strat", "close"),
                "unknown test strategy 'close'");
        assertThat(CliIT.crucible(dir, "eval", "gen", "--help").stdout()).contains("--temp");
        Files.writeString(dir.resolve("bad.toml"), "[[questions]\nid = 1\n");
        CliIT.assertOneLineError(CliIT.crucible(dir, "eval", "run-tests", "bad.toml", "x.toml"), "bad.toml");
        CliIT.Outcome noKey = CliIT.crucible(dir, "eval", "generate-completions", "tested.toml", "gen.toml",
                "--base-url", "http://127.0.0.1:9");
        if (System.getenv("OPENAI_API_KEY") == null) {
            CliIT.assertOneLineError(noKey, "no API key");
        }
    }

    @Test
    void rewardScoresFromStdin(@TempDir Path dir) throws Exception {
        CliIT.Outcome o = CliIT.crucible(dir, """
                {"messages": [{"role": "user", "content": "Expected output: 42"},
                              {"role": "assistant", "content": "```python\\nprint(6 * 7)\\n```"}]}
                """.getBytes(StandardCharsets.UTF_8), "reward", "-");
        assertThat(o.exit()).as(o.stderr()).isZero();
        assertThat(JSON.readTree(o.stdout()).get("score").asDouble()).isEqualTo(1.0);
        CliIT.assertOneLineError(CliIT.crucible(dir, "{\"messages\": [".getBytes(StandardCharsets.UTF_8), "reward", "-"),
                "not a reward request");
    }

    static String readQuietly(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "(" + file + " unreadable: " + e + ")";
        }
    }
}
