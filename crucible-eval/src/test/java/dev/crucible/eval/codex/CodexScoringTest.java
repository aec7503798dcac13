package dev.crucible.eval.codex;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.crucible.eval.codex.CodexScoring.ScoringStrategy;
import dev.crucible.eval.codex.CodexScoring.TestStrategy;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Codex Runner's scoring, checked against its own code and tests (James-Ansley/codex-runner tests/test_strategies.py,
 * utils/testing_strategy.py, utils/scoring_strategy.py, utils/csv_writer.py) and rapidfuzz's documented values.
 */
class CodexScoringTest {
    static final List<Double> RIGHT = List.of(1.0);
    static final List<Double> WRONG = List.of(0.0);

    static List<Double> times(List<Double> one, int n) {
        return Collections.nCopies(n, one.get(0));
    }

    static List<Double> concat(List<Double> a, List<Double> b) {
        return Stream.concat(a.stream(), b.stream()).toList();
    }

    @Test
    void ratioIsRapidfuzzsNormalisedIndelSimilarity() {
        assertThat(CodexScoring.ratio("this is a test", "this is a test!")).isEqualTo(96.55172413793103); // rapidfuzz README
        assertThat(CodexScoring.ratio("lewenstein", "levenshtein") / 100).isCloseTo(0.8571428571428572, within(1e-15)); // Indel docs
        assertThat(CodexScoring.ratio("", "")).isEqualTo(100.0);
        assertThat(CodexScoring.ratio("abc", "")).isZero();
        assertThat(CodexScoring.ratio("ab😀c", "ab😀c")).isEqualTo(100.0);
    }

    /** The bit-parallel LCS agrees with the textbook dynamic programme, across word boundaries and alphabets. */
    @Test
    void bitParallelLcsMatchesTheDynamicProgramme() {
        Random random = new Random(7);
        for (int round = 0; round < 300; round++) {
            String alphabet = round % 3 == 0 ? "ab" : round % 3 == 1 ? "abcdefgh \n" : "xyzé😀";
            String a = randomString(random, alphabet, random.nextInt(200));
            String b = randomString(random, alphabet, random.nextInt(200));
            int[] x = a.codePoints().toArray();
            int[] y = b.codePoints().toArray();
            int[][] dp = new int[x.length + 1][y.length + 1];
            for (int i = 1; i <= x.length; i++) {
                for (int j = 1; j <= y.length; j++) {
                    dp[i][j] = x[i - 1] == y[j - 1] ? dp[i - 1][j - 1] + 1 : Math.max(dp[i - 1][j], dp[i][j - 1]);
                }
            }
            double want = x.length + y.length == 0 ? 100 : 100.0 * 2 * dp[x.length][y.length] / (x.length + y.length);
            assertThat(CodexScoring.ratio(a, b)).as(a + " | " + b).isCloseTo(want, within(1e-9));
        }
    }

    static String randomString(Random random, String alphabet, int length) {
        int[] points = alphabet.codePoints().toArray();
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < length; i++) {
            s.appendCodePoint(points[random.nextInt(points.length)]);
        }
        return s.toString();
    }

    @Test
    void testStrategies() {
        assertThat(TestStrategy.EXACT.score(" Hello\n", "Hello")).isEqualTo(1.0);
        assertThat(TestStrategy.EXACT.score("Hello", "Hello!")).isEqualTo(0.0);
        assertThat(TestStrategy.FUZZY.score("this is a test", "this is a test!")).isCloseTo(0.9655, within(1e-4));
        assertThat(TestStrategy.FUZZY_W_CUTOFF.score("this is a test", "this is a test!")).isEqualTo(1.0);
        assertThat(TestStrategy.FUZZY_W_CUTOFF.score("Hello", "Goodbye")).isEqualTo(0.0);
        assertThat(TestStrategy.of("fuzzy_w_cutoff")).isEqualTo(TestStrategy.FUZZY_W_CUTOFF);
    }

    /** tests/test_strategies.py, case by case. */
    @Test
    void scoringStrategiesAsCodexRunnersOwnTests() {
        assertThat(ScoringStrategy.BASIC.scores(List.of(times(RIGHT, 4)))).containsExactly(1.0);
        assertThat(ScoringStrategy.BASIC.scores(List.of(times(WRONG, 4)))).containsExactly(0.0);
        assertThat(ScoringStrategy.BASIC.scores(List.of(concat(times(RIGHT, 2), times(WRONG, 2))))).containsExactly(0.5);
        assertThat(ScoringStrategy.BASIC.scores(List.of(concat(RIGHT, times(WRONG, 3))))).containsExactly(0.25);
        assertThat(ScoringStrategy.ALL_OR_NOTHING.scores(List.of(times(RIGHT, 4)))).containsExactly(1.0);
        assertThat(ScoringStrategy.ALL_OR_NOTHING.scores(List.of(concat(times(RIGHT, 2), times(WRONG, 2)))))
                .containsExactly(0.0);
        assertThat(ScoringStrategy.EXPECTED.scores(List.of(RIGHT, RIGHT, RIGHT))).containsExactly(1.0);
        assertThat(ScoringStrategy.EXPECTED.scores(List.of(times(WRONG, 4), times(WRONG, 4), times(WRONG, 4))))
                .containsExactly(0.0);
        assertThat(String.format("%.2f", ScoringStrategy.EXPECTED.scores(List.of(RIGHT, WRONG)).get(0))).isEqualTo("0.98");
        assertThat(ScoringStrategy.FINITE_EXPECTED.scores(List.of(RIGHT, RIGHT, RIGHT))).containsExactly(1.0);
        assertThat(String.format("%.2f", ScoringStrategy.FINITE_EXPECTED.scores(List.of(RIGHT, WRONG)).get(0)))
                .isEqualTo("0.97");
        assertThat(ScoringStrategy.of("finite-expected")).isEqualTo(ScoringStrategy.FINITE_EXPECTED);
    }

    @Test
    void theSummaryCsvIsLaidOutAsList2csvWritesIt() {
        ObjectNode root = (ObjectNode) JsonMapper.builder().build().readTree("""
                {"questions": [
                  {"id": "q1", "completions": [
                    {"test_results": [{"expect": "1", "got": "1"}, {"expect": "2", "got": "2"}]},
                    {"test_results": [{"expect": "1", "got": "1"}, {"expect": "2", "got": "3"}]},
                    {"test_results": [{"expect": "1", "got": "0"}, {"expect": "2", "got": "3"}]}]},
                  {"id": "q,2", "completions": [{"results": [true]}, {"results": [true]}, {"results": [false]}]}]}""");
        assertThat(CodexScoring.summary(root, TestStrategy.EXACT, ScoringStrategy.BASIC)).isEqualTo(
                "qid,response 1,response 2,response 3,average,median,stdev,min,max\r\n"
                        + "q1,1.0000,0.5000,0.0000,0.5000,0.5000,0.5000,0.0000,1.0000\r\n"
                        + "\"q,2\",1.0000,1.0000,0.0000,0.6667,1.0000,0.5774,0.0000,1.0000\r\n");
        // one score per question (p = 1/3 and 2/3 over 30 attempts, computed by scoring_strategy.py's formula);
        // a single value has no sample stdev
        assertThat(CodexScoring.summary(root, TestStrategy.EXACT, ScoringStrategy.EXPECTED)).isEqualTo(
                "qid,response 1,average,median,stdev,min,max\r\n"
                        + "q1,0.9345,0.9345,0.9345,,0.9345,0.9345\r\n"
                        + "\"q,2\",0.9917,0.9917,0.9917,,0.9917,0.9917\r\n");
    }
}
