package dev.crucible.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.crucible.error.RequestException;
import org.junit.jupiter.api.Test;

class ComparisonTest {
    static double score(String mode, String expected, String actual) {
        return Comparison.of(new Comparison.Spec(mode, null, null)).compare(expected, actual).score();
    }

    @Test
    void theDefaultIgnoresTrailingWhitespaceAndTrailingBlankLinesOnly() {
        Comparison lines = Comparison.of(null);
        assertThat(lines.compare("a b\nc", "a b  \r\nc\n\n\n").passed()).isTrue();
        assertThat(lines.compare("a b\nc", " a b\nc").passed()).isFalse();
        assertThat(lines.compare("a b\nc", "a  b\nc").passed()).isFalse();
        assertThat(lines.compare("a\n\nb", "a\nb").passed()).isFalse();
    }

    @Test
    void exactWhitespaceAndCase() {
        assertThat(score("exact", "1\n", "1\n")).isEqualTo(1.0);
        assertThat(score("exact", "1\n", "1")).isZero();
        assertThat(score("whitespace", "1 2\n3", " 1\t2 3 \n")).isEqualTo(1.0);
        assertThat(score("whitespace", "1 2 3", "1 2")).isZero();
        assertThat(score("case_insensitive", "YES\nno", "yes\nNO  ")).isEqualTo(1.0);
        assertThat(score("case_insensitive", "YES", "YES!")).isZero();
    }

    @Test
    void numericToleranceIsPerToken() {
        Comparison abs = Comparison.of(new Comparison.Spec("numeric", 1e-6, 0.0));
        assertThat(abs.compare("0.3333333 2", "0.33333333333 2").passed()).isTrue();
        assertThat(abs.compare("0.333 2", "0.334 2").passed()).isFalse();
        assertThat(abs.compare("1 x", "1 y").passed()).isFalse();
        assertThat(abs.compare("1 2", "1 2 3").passed()).isFalse();
        Comparison rel = Comparison.of(new Comparison.Spec("numeric", 0.0, 1e-3));
        assertThat(rel.compare("1000000", "1000500").passed()).isTrue();
        assertThat(rel.compare("1000000", "1002000").passed()).isFalse();
        assertThatThrownBy(() -> Comparison.of(new Comparison.Spec("numeric", -1.0, null)))
                .isInstanceOf(RequestException.class);
        assertThatThrownBy(() -> Comparison.of(new Comparison.Spec("fuzzy", null, null)))
                .isInstanceOf(RequestException.class).hasMessageContaining("partial");
    }

    @Test
    void partialCreditFollowsRewardKitWithoutItsNewlineBug() {
        assertThat(score("partial", "42", " 42 \n")).isEqualTo(1.0);
        assertThat(score("partial", "100", "100.05")).isEqualTo(1.0); // rel 0.0005
        assertThat(score("partial", "100", "100.5")).isEqualTo(0.9);  // rel 0.005
        assertThat(score("partial", "100", "105")).isEqualTo(0.7);    // rel 0.05
        assertThat(score("partial", "100", "150")).isCloseTo(0.5, within(1e-9));
        assertThat(score("partial", "0", "0.0001")).isZero();
        assertThat(score("partial", "[1, 2, 3]", "[1, 2, 3]")).isEqualTo(1.0);
        assertThat(score("partial", "[\"a\", \"b\", \"c\", \"d\"]", "[\"a\", \"b\"]"))
                .isCloseTo(0.3 * 0.5 + 0.7 * 0.5, within(1e-9));
        assertThat(score("partial", "[1, 2]", "[1, 3]")).isCloseTo(0.3 + 0.7 * (1 + 0.5) / 2, within(1e-9));
        // several lines: the line rule applies (reward-kit collapsed newlines first, so it never did)
        double lines = score("partial", "a\nb\nc\nd", "a\nb\nc\nx");
        assertThat(lines).isCloseTo(0.3 * 1.0 + 0.7 * 0.75, within(1e-9));
        assertThat(score("partial", "a\nb", "a b")).isLessThan(1.0);
        assertThat(score("partial", "hello world", "hello world!")).isCloseTo(11.0 / 12, within(1e-9));
        assertThat(score("partial", "abc", "xyz")).isZero();
    }
}
