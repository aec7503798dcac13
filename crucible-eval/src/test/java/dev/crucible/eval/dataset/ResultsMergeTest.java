package dev.crucible.eval.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.eval.CaseStatus;
import dev.crucible.eval.dataset.DatasetRun.SampleId;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What eval merge refuses, and that its pass@k does not depend on how the samples were split. */
class ResultsMergeTest {
    static String line(String task, int sample, boolean passed, String result) {
        return Dataset.JSON.writeValueAsString(new DatasetRun.SampleResult(task, sample, passed,
                passed ? CaseStatus.OK : CaseStatus.RUNTIME_ERROR, result, 12));
    }

    static Path file(Path dir, String name, String... lines) throws Exception {
        Path f = dir.resolve(name);
        Files.writeString(f, String.join("\n", lines) + "\n");
        return f;
    }

    @Test
    void aSampleTwiceInOneFileIsRefused(@TempDir Path dir) throws Exception {
        Path a = file(dir, "a.jsonl", line("t/0", 0, true, "passed"), line("t/0", 0, true, "passed"));
        assertThatThrownBy(() -> ResultsMerge.merge(List.of(a), dir.resolve("out.jsonl"), null, List.of(1)))
                .isInstanceOf(ResultsMerge.Refused.class).hasMessageContaining("t/0 sample 0 is twice in")
                .hasMessageContaining("lines 1 and 2");
        assertThat(dir.resolve("out.jsonl")).doesNotExist();
    }

    @Test
    void twoVerdictsForOneSampleAreRefusedAndTheSameVerdictTwiceIsKeptOnce(@TempDir Path dir) throws Exception {
        Path a = file(dir, "a.jsonl", line("t/0", 0, true, "passed"), "{\"summary\":{}}");
        Path same = file(dir, "same.jsonl", line("t/0", 0, true, "passed"), line("t/0", 1, false, "failed: x"));
        Path other = file(dir, "other.jsonl", line("t/0", 0, false, "failed: AssertionError"));
        ResultsMerge.Summary s = ResultsMerge.merge(List.of(a, same), dir.resolve("out.jsonl"), null, List.of(1));
        assertThat(s.overlaps()).isEqualTo(1);
        assertThat(s.samples()).isEqualTo(2);
        assertThat(s.passAtK()).containsEntry("pass@1", 0.5);
        assertThatThrownBy(() -> ResultsMerge.merge(List.of(a, other), dir.resolve("out2.jsonl"), null, List.of(1)))
                .isInstanceOf(ResultsMerge.Refused.class).hasMessageContaining("t/0 sample 0 has two verdicts")
                .hasMessageContaining("a.jsonl:1").hasMessageContaining("other.jsonl:1");
    }

    @Test
    void withTheDatasetAMissingOrUnknownSampleIsRefused(@TempDir Path dir) throws Exception {
        List<SampleId> expected = List.of(new SampleId("t/0", 0), new SampleId("t/0", 1));
        Path a = file(dir, "a.jsonl", line("t/0", 0, true, "passed"));
        assertThatThrownBy(() -> ResultsMerge.merge(List.of(a), dir.resolve("o.jsonl"), expected, List.of(1)))
                .hasMessageContaining("1 of the dataset's 2 samples are in no input (first: t/0 sample 1)");
        Path b = file(dir, "b.jsonl", line("t/0", 1, true, "passed"), line("t/9", 0, true, "passed"));
        assertThatThrownBy(() -> ResultsMerge.merge(List.of(a, b), dir.resolve("o.jsonl"), expected, List.of(1)))
                .hasMessageContaining("t/9 sample 0 (").hasMessageContaining("is not a sample of the dataset given");
    }

    @Test
    void aLineCutByAKillEndsTheFileHarmlesslyAndAnyOtherBadLineIsRefused(@TempDir Path dir) throws Exception {
        Path cut = dir.resolve("cut.jsonl");
        Files.writeString(cut, line("t/0", 0, true, "passed") + "\n{\"task_id\":\"t/0\",\"sam");
        assertThat(ResultsMerge.merge(List.of(cut), dir.resolve("o.jsonl"), null, List.of(1)).samples()).isEqualTo(1);
        Path bad = file(dir, "bad.jsonl", "not json", line("t/0", 0, true, "passed"));
        assertThatThrownBy(() -> ResultsMerge.merge(List.of(bad), dir.resolve("o.jsonl"), null, List.of(1)))
                .hasMessageContaining("bad.jsonl:1: not a result line");
    }

    @Test
    void passAtKIsTheSameBitsInAnyProblemOrder() {
        List<int[]> problems = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            problems.add(new int[] {10 + i % 7, (i * 37) % (10 + i % 7)});
        }
        Map<Integer, Double> first = PassAtK.mean(problems, List.of(1, 5, 10));
        for (long seed = 0; seed < 20; seed++) {
            Collections.shuffle(problems, new Random(seed));
            assertThat(PassAtK.mean(problems, List.of(1, 5, 10))).isEqualTo(first);
        }
    }

    @Test
    void aShardIsIOfNCountedFromZero() {
        assertThat(Shard.parse("0/4")).isEqualTo(new Shard(0, 4));
        assertThat(Shard.parse(" 3 / 4 ").includes(7)).isTrue();
        for (String bad : List.of("4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", "")) {
            assertThatThrownBy(() -> Shard.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("0 <= I < N");
        }
    }
}
