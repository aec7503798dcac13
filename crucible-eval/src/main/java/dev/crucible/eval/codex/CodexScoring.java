package dev.crucible.eval.codex;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Codex Runner's {@code summary} step, as its own code defines it (James-Ansley/codex-runner: utils/testing_strategy.py,
 * utils/scoring_strategy.py, utils/csv_writer.py): a test strategy scores one test result, a scoring strategy turns
 * a question's completions into scores, and the CSV is laid out as its list2csv writer lays it out.
 */
public final class CodexScoring {
    /** Codex Runner's FUZZY_CUTOFF. */
    static final double FUZZY_CUTOFF = 90;
    /** The UoA Moodle CodeRunner penalty scheme, attempt by attempt. */
    static final double[] PENALTIES = {1.0, 1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5};

    private CodexScoring() {}

    /** How one test's output is scored against its {@code expect} (both stripped). */
    public enum TestStrategy {
        EXACT("exact"), FUZZY_W_CUTOFF("fuzzy_w_cutoff"), FUZZY("fuzzy");

        public final String wireName;

        TestStrategy(String wireName) {
            this.wireName = wireName;
        }

        public double score(String expected, String got) {
            String e = expected.strip();
            String g = got.strip();
            return switch (this) {
                case EXACT -> e.equals(g) ? 1 : 0;
                case FUZZY_W_CUTOFF -> ratio(e, g) >= FUZZY_CUTOFF ? 1 : 0;
                case FUZZY -> ratio(e, g) / 100;
            };
        }

        public static TestStrategy of(String name) {
            return Arrays.stream(values()).filter(s -> s.wireName.equalsIgnoreCase(name)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("unknown test strategy '" + name
                            + "' (exact, fuzzy_w_cutoff or fuzzy)"));
        }
    }

    /** How a question's completions become scores. */
    public enum ScoringStrategy {
        BASIC("basic"), EXPECTED("expected"), FINITE_EXPECTED("finite-expected"), ALL_OR_NOTHING("all-or-nothing");

        public final String wireName;

        ScoringStrategy(String wireName) {
            this.wireName = wireName;
        }

        /** Each completion's list of test scores in, the question's scores out (one per completion, or one). */
        public List<Double> scores(List<List<Double>> completions) {
            return switch (this) {
                case BASIC -> completions.stream().map(CodexScoring::mean).toList();
                case ALL_OR_NOTHING -> allOrNothing(completions);
                case EXPECTED -> List.of(expected(completions, completions.size() * 10, false));
                case FINITE_EXPECTED -> List.of(expected(completions, PENALTIES.length, true));
            };
        }

        public static ScoringStrategy of(String name) {
            return Arrays.stream(values()).filter(s -> s.wireName.equalsIgnoreCase(name)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("unknown scoring strategy '" + name
                            + "' (basic, expected, finite-expected or all-or-nothing)"));
        }
    }

    private static List<Double> allOrNothing(List<List<Double>> completions) {
        return completions.stream().map(tests -> tests.stream().allMatch(s -> s == 1) ? 1.0 : 0.0).toList();
    }

    /**
     * The expected score of a student who resubmits until a pass, each attempt passing with the all-or-nothing pass
     * rate, attempt {@code i} worth {@code PENALTIES[min(i, 11)]}: over {@code attempts} attempts.
     */
    private static double expected(List<List<Double>> completions, int attempts, boolean finite) {
        List<Double> passes = allOrNothing(completions);
        double p = passes.stream().mapToDouble(Double::doubleValue).sum() / passes.size();
        double result = 0;
        for (int i = 0; i < attempts; i++) {
            double penalty = PENALTIES[finite ? i : Math.min(i, PENALTIES.length - 1)];
            result += Math.pow(1 - p, i) * p * penalty;
        }
        return result;
    }

    /**
     * rapidfuzz's {@code fuzz.ratio}: the normalised Indel similarity × 100, {@code (1 - (|a| + |b| - 2·LCS) / (|a| +
     * |b|)) × 100} over code points; 100 for two empty strings. The LCS is computed bit-parallel (Hyyrö), as rapidfuzz
     * does, so long outputs stay cheap: |a|/64 words per character of b.
     */
    public static double ratio(String a, String b) {
        int[] x = a.codePoints().toArray();
        int[] y = b.codePoints().toArray();
        int total = x.length + y.length;
        if (total == 0) {
            return 100;
        }
        if (x.length < y.length) { // the bit vectors over the shorter one
            int[] t = x;
            x = y;
            y = t;
        }
        int lcs = y.length == 0 ? 0 : lcs(y, x);
        return 100.0 * (2.0 * lcs) / total;
    }

    /** Length of the longest common subsequence; bit vectors over {@code a}. */
    private static int lcs(int[] a, int[] b) {
        int words = (a.length + 63) / 64;
        Map<Integer, long[]> masks = new HashMap<>();
        for (int i = 0; i < a.length; i++) {
            masks.computeIfAbsent(a[i], k -> new long[words])[i / 64] |= 1L << (i % 64);
        }
        long[] s = new long[words];
        Arrays.fill(s, -1L);
        long[] none = new long[words];
        for (int c : b) {
            long[] m = masks.getOrDefault(c, none);
            long carry = 0;
            for (int w = 0; w < words; w++) {
                long u = s[w] & m[w];
                long sum = s[w] + u + carry;
                carry = Long.compareUnsigned(sum, s[w]) < 0 || (carry == 1 && sum == s[w]) ? 1 : 0;
                s[w] = sum | (s[w] & ~m[w]);
            }
        }
        int zeros = 0;
        for (int w = 0; w < words; w++) {
            long v = ~s[w];
            if (w == words - 1 && a.length % 64 != 0) {
                v &= (1L << (a.length % 64)) - 1;
            }
            zeros += Long.bitCount(v);
        }
        return zeros;
    }

    static double mean(List<Double> xs) {
        return xs.stream().mapToDouble(Double::doubleValue).average().orElse(0);
    }

    /** The test scores of each completion of a question: v2's {@code got} against {@code expect}, or v1's booleans. */
    static List<List<Double>> testScores(JsonNode question, TestStrategy strategy) {
        List<List<Double>> out = new ArrayList<>();
        for (JsonNode c : question.path("completions")) {
            List<Double> tests = new ArrayList<>();
            if (c.path("test_results").isArray() && !c.path("test_results").isEmpty()) {
                c.get("test_results").forEach(t -> tests.add(strategy.score(t.path("expect").asString(""),
                        t.path("got").asString(""))));
            } else if (c.path("results").isArray()) {
                c.get("results").forEach(r -> tests.add(r.asBoolean() ? 1.0 : 0.0)); // v1 keeps only pass/fail
            }
            if (tests.isEmpty()) {
                tests.add(0.0); // not tested: nothing passed
            }
            out.add(tests);
        }
        return out;
    }

    /**
     * Codex Runner's summary CSV: {@code qid}, {@code response 1…n} (n from the first question, as its writer does),
     * {@code average}, {@code median}, {@code stdev} (sample; empty below two scores), {@code min}, {@code max}, four
     * decimals.
     */
    public static String summary(ObjectNode root, TestStrategy test, ScoringStrategy scoring) {
        List<String> ids = new ArrayList<>();
        List<List<Double>> rows = new ArrayList<>();
        for (JsonNode q : root.path("questions")) {
            ids.add(q.path("id").asString(""));
            rows.add(scoring.scores(testScores(q, test)));
        }
        int n = rows.isEmpty() ? 0 : rows.get(0).size();
        StringBuilder csv = new StringBuilder("qid");
        for (int i = 1; i <= n; i++) {
            csv.append(",response ").append(i);
        }
        csv.append(",average,median,stdev,min,max\r\n");
        for (int r = 0; r < rows.size(); r++) {
            List<Double> scores = rows.get(r);
            csv.append(field(ids.get(r)));
            for (int i = 0; i < n; i++) {
                csv.append(',').append(i < scores.size() ? four(scores.get(i)) : "");
            }
            double[] sorted = scores.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            if (sorted.length == 0) {
                csv.append(",,,,,\r\n");
                continue;
            }
            double mean = Arrays.stream(sorted).average().orElse(0);
            double median = sorted.length % 2 == 1 ? sorted[sorted.length / 2]
                    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
            String stdev = sorted.length < 2 ? "" : four(Math.sqrt(Arrays.stream(sorted)
                    .map(v -> (v - mean) * (v - mean)).sum() / (sorted.length - 1)));
            csv.append(',').append(four(mean)).append(',').append(four(median)).append(',').append(stdev)
                    .append(',').append(four(sorted[0])).append(',').append(four(sorted[sorted.length - 1])).append("\r\n");
        }
        return csv.toString();
    }

    private static String four(double d) {
        return String.format(Locale.ROOT, "%.4f", d);
    }

    private static String field(String s) {
        return s.contains(",") || s.contains("\"") || s.contains("\n") || s.contains("\r")
                ? "\"" + s.replace("\"", "\"\"") + "\"" : s;
    }
}
