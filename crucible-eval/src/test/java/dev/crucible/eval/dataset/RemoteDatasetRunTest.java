package dev.crucible.eval.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.eval.Judge;
import dev.crucible.eval.dataset.FlakyFront.Fault;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A dataset run judged remotely gives the local run's verdicts line for line, through every failure a cluster has
 * between the client and a sandbox; a sample without an answer is left for the resume, never failed; shards merge
 * to the single run's pass@k.
 */
class RemoteDatasetRunTest {
    static Judge judge;
    static FlakyFront front;

    @BeforeAll
    static void start() throws Exception {
        Crucible c = TestHost.crucible();
        c.startPool(Map.of("python", 2));
        judge = new Judge(c.executor());
        front = new FlakyFront(judge);
    }

    @AfterAll
    static void stop() {
        front.close();
    }

    static RemoteCrucible remote(int attempts) throws Exception {
        return RemoteCrucible.connect(RemoteCrucible.Options.of(front.url(), null).withAttempts(attempts)
                .withBackoff(Duration.ofMillis(5), Duration.ofMillis(40)));
    }

    /** 30 HumanEval problems, 3 samples each: the canonical solution, a wrong answer, an exit before the tests. */
    static Path samples(Path dir) throws Exception {
        List<String> lines = new ArrayList<>();
        for (var p : Dataset.load("humaneval", DatasetRunTest.data("HumanEval.jsonl.gz")).problems().values()) {
            if (lines.size() == 90) {
                break;
            }
            for (String completion : List.of(p.reference(), "    return None\n", "    import sys\n    sys.exit(0)\n")) {
                lines.add(Dataset.JSON.writeValueAsString(Map.of("task_id", p.id(), "completion", completion)));
            }
        }
        Path file = dir.resolve("samples.jsonl");
        Files.write(file, lines);
        return file;
    }

    /** {@code fault} on each program's first try (a retry resends the same body), then answers. */
    static Function<String, Fault> firstTryFails(Function<String, Fault> fault) {
        Map<String, Integer> tries = new ConcurrentHashMap<>();
        return body -> tries.merge(body, 1, Integer::sum) > 1 ? Fault.NONE : fault.apply(body);
    }

    static DatasetRun.Options options(Path problems, Path samples, Path out) {
        return new DatasetRun.Options("humaneval", problems, samples, List.of(1, 2), out, 4, DatasetRunTest.KNOWN_GOOD_MS);
    }

    static Map<String, String> verdicts(Path out) throws Exception {
        return DatasetRunTest.lines(out).stream().filter(n -> n.has("task_id")).collect(Collectors.toMap(
                n -> n.get("task_id").asString() + "#" + n.get("sample").asInt(),
                n -> n.get("passed").asBoolean() + " " + n.get("status").asString() + " " + n.get("result").asString()));
    }

    static long sampleLines(Path out) throws Exception {
        return DatasetRunTest.lines(out).stream().filter(n -> n.has("task_id")).count();
    }

    @Test
    void remoteVerdictsAreTheLocalOnesThroughRefusalsAndLostAnswers(@TempDir Path dir) throws Exception {
        Path problems = DatasetRunTest.data("HumanEval.jsonl.gz");
        Path samples = samples(dir);
        DatasetRun.Summary local = new DatasetRun(judge).run(options(problems, samples, dir.resolve("local.jsonl")),
                DatasetRun.Progress.NONE, new ArrayList<>());
        Fault[] cycle = {Fault.HTTP_502, Fault.NONE, Fault.HTTP_503, Fault.RAN_THEN_DROPPED, Fault.HTTP_429, Fault.NONE,
            Fault.DROPPED};
        front.plan(firstTryFails(body -> cycle[Math.floorMod(body.hashCode(), cycle.length)]));
        RemoteCrucible remote = remote(4);
        List<DatasetRun.Unjudged> unjudged = new ArrayList<>();
        DatasetRun.Summary far = new DatasetRun(remote).run(options(problems, samples, dir.resolve("remote.jsonl")),
                DatasetRun.Progress.NONE, new ArrayList<>(), unjudged);

        assertThat(unjudged).isEmpty();
        assertThat(far.unjudged()).isZero();
        assertThat(far.passAtK()).isEqualTo(local.passAtK()); // the same doubles, bit for bit
        assertThat(far.passed()).isEqualTo(local.passed()).isEqualTo(30);
        assertThat(verdicts(dir.resolve("remote.jsonl"))).isEqualTo(verdicts(dir.resolve("local.jsonl"))).hasSize(90);
        assertThat(sampleLines(dir.resolve("remote.jsonl"))).as("each sample written once").isEqualTo(90);
        assertThat(remote.retries()).containsKeys("http 502", "http 503", "http 429", "io");
        assertThat(front.runs.values().stream().mapToInt(AtomicInteger::get).sum())
                .as("an answer lost after its run was run again: harmless, and written once").isGreaterThan(90);
    }

    @Test
    void aSampleThatNeverGetsAnAnswerIsLeftUnjudgedAndRunsOnResume(@TempDir Path dir) throws Exception {
        Path problems = DatasetRunTest.data("HumanEval.jsonl.gz");
        Path samples = samples(dir);
        Path out = dir.resolve("remote.jsonl");
        Function<String, Fault> down = body -> body.contains("def has_close_elements") ? Fault.HTTP_503 : Fault.NONE;
        front.plan(down); // HumanEval/0's three samples: the balancer never has a server for them
        List<DatasetRun.Unjudged> unjudged = new ArrayList<>();
        DatasetRun.Summary first = new DatasetRun(remote(3)).run(options(problems, samples, out),
                DatasetRun.Progress.NONE, new ArrayList<>(), unjudged);
        assertThat(first.unjudged()).isEqualTo(3);
        assertThat(first.passAtK()).as("no pass@k over a partial run").isEmpty();
        assertThat(unjudged).extracting(u -> u.id().taskId()).containsOnly("HumanEval/0");
        assertThat(unjudged.getFirst().reason()).contains("no answer after 3 attempts").contains("http 503");
        assertThat(verdicts(out)).hasSize(87).doesNotContainKey("HumanEval/0#0");

        front.plan(body -> Fault.NONE);
        DatasetRun.Summary resumed = new DatasetRun(remote(3)).run(options(problems, samples, out),
                DatasetRun.Progress.NONE, new ArrayList<>());
        assertThat(resumed.ran()).isEqualTo(3);
        assertThat(resumed.resumed()).isEqualTo(87);
        assertThat(resumed.unjudged()).isZero();
        assertThat(resumed.passAtK()).containsKeys("pass@1", "pass@2");
        assertThat(sampleLines(out)).isEqualTo(90);
    }

    @Test
    void aRefusedTokenStopsTheRunWithEverySampleLeftForLater(@TempDir Path dir) throws Exception {
        front.plan(body -> Fault.HTTP_401);
        List<DatasetRun.Unjudged> unjudged = new ArrayList<>();
        DatasetRun.Summary s = new DatasetRun(remote(3)).run(options(DatasetRunTest.data("HumanEval.jsonl.gz"),
                samples(dir), dir.resolve("out.jsonl")), DatasetRun.Progress.NONE, new ArrayList<>(), unjudged);
        assertThat(s.unjudged()).isEqualTo(90);
        assertThat(unjudged.size()).as("stopped at the first refusal, not after 90 of them").isLessThanOrEqualTo(6);
        assertThat(unjudged.getFirst().reason()).contains("401").contains("--token");
        front.plan(body -> Fault.NONE);
    }

    @Test
    void concurrencyFollowsWhatHealthzSaysAndTheCap() throws Exception {
        RemoteCrucible.Options o = RemoteCrucible.Options.of(front.url(), null).withHealthEvery(Duration.ofMillis(1));
        RemoteCrucible remote = RemoteCrucible.connect(o);
        RemoteCrucible capped = RemoteCrucible.connect(o.withMaxConcurrency(8));
        assertThat(remote.concurrency()).isEqualTo(6); // max_running 3 + max_queued 3
        front.health = "{\"status\":\"ok\",\"max_running\":5,\"max_queued\":10}";
        try {
            // read again in the background
            await("the new /healthz read by both clients").atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(10))
                    .untilAsserted(() -> {
                        assertThat(remote.concurrency()).isEqualTo(15);
                        assertThat(capped.concurrency()).isEqualTo(8);
                    });
        } finally {
            front.health = "{\"status\":\"ok\",\"max_running\":3,\"max_queued\":3}";
        }
    }

    @Test
    void stdioProblemsAreJudgedThroughEvaluateWithTheLocalVerdicts(@TempDir Path dir) throws Exception {
        Path problems = dir.resolve("stdio.jsonl");
        Files.write(problems, Files.readAllLines(DatasetRunTest.data("codecontests_300_stdio.jsonl")).subList(0, 12));
        front.plan(firstTryFails(body -> Math.floorMod(body.hashCode(), 3) == 0 ? Fault.DROPPED : Fault.NONE));
        DatasetRun.Options o = new DatasetRun.Options("stdio", problems, null, List.of(1), dir.resolve("local.jsonl"),
                4, 10_000);
        DatasetRun.Summary local = new DatasetRun(judge).run(o, DatasetRun.Progress.NONE, new ArrayList<>());
        RemoteCrucible remote = remote(2);
        DatasetRun.Summary far = new DatasetRun(remote).run(o.withOut(dir.resolve("remote.jsonl")),
                DatasetRun.Progress.NONE, new ArrayList<>());
        assertThat(far.passAtK()).isEqualTo(local.passAtK());
        assertThat(verdicts(dir.resolve("remote.jsonl"))).isEqualTo(verdicts(dir.resolve("local.jsonl"))).hasSize(12);
        front.plan(body -> Fault.NONE);
    }

    @Test
    void shardsMergeToTheSingleRunsPassAtKExactly(@TempDir Path dir) throws Exception {
        Path problems = DatasetRunTest.data("HumanEval.jsonl.gz");
        Path samples = samples(dir);
        DatasetRun.Summary single = new DatasetRun(judge).run(options(problems, samples, dir.resolve("single.jsonl")),
                DatasetRun.Progress.NONE, new ArrayList<>());
        List<Path> parts = new ArrayList<>();
        int[] sizes = new int[4];
        for (int i = 0; i < 4; i++) { // shards 1 and 3 judged remotely: a shard may run anywhere
            Path part = dir.resolve("shard-" + i + ".jsonl");
            DatasetRun runner = i % 2 == 0 ? new DatasetRun(judge) : new DatasetRun(remote(3));
            DatasetRun.Summary s = runner.run(options(problems, samples, part).withShard(new Shard(i, 4)),
                    DatasetRun.Progress.NONE, new ArrayList<>());
            assertThat(s.shard()).isEqualTo(i + "/4");
            sizes[i] = s.samples();
            parts.add(part);
        }
        assertThat(sizes).containsExactly(23, 23, 22, 22);
        Path merged = dir.resolve("merged.jsonl");
        ResultsMerge.Summary m = ResultsMerge.merge(parts.reversed(), merged,
                DatasetRun.sampleIds("humaneval", problems, samples), List.of(1, 2));
        assertThat(m.passAtK()).isEqualTo(single.passAtK());
        assertThat(m.samples()).isEqualTo(90);
        assertThat(verdicts(merged)).isEqualTo(verdicts(dir.resolve("single.jsonl")));
        ResultsMerge.Summary blind = ResultsMerge.merge(parts, dir.resolve("blind.jsonl"), null, List.of(1, 2));
        assertThat(blind.passAtK()).as("without the dataset too").isEqualTo(single.passAtK());

        assertThatThrownBy(() -> ResultsMerge.merge(parts.subList(0, 3), dir.resolve("x.jsonl"),
                DatasetRun.sampleIds("humaneval", problems, samples), List.of(1)))
                .isInstanceOf(ResultsMerge.Refused.class).hasMessageContaining("22 of the dataset's 90 samples are in no input");
        assertThat(dir.resolve("x.jsonl")).doesNotExist();
    }
}
