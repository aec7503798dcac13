package dev.crucible.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LimitsSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Judging through the real sandbox. */
class JudgeTest {
    static final Judge JUDGE = new Judge(TestHost.crucible().executor());

    static Judge.Result judge(String language, String code, List<Judge.TestCase> cases, boolean all) throws Exception {
        return JUDGE.evaluate(new Judge.Request(language, code, cases, null, all, null, null));
    }

    @Test
    void aCompiledProgramIsCompiledOnceAndJudgedPerCase() throws Exception {
        String cpp = "#include <iostream>\nint main(){long a,b; std::cin>>a>>b; std::cout<<a+b<<\"  \\n\";}";
        Judge.Result r = judge("cpp", cpp, List.of(new Judge.TestCase(null, "1 2", "3"),
                new Judge.TestCase(null, "40 2", "42\n\n"), new Judge.TestCase(null, "1 1", "3"),
                new Judge.TestCase(null, "2 2", "4")), false);
        assertThat(r.compile()).isNotNull();
        assertThat(r.compile().status().wireName()).isEqualTo("ok");
        assertThat(r.results()).as(r.results().toString()).extracting(Judge.CaseResult::status)
                .containsExactly(CaseStatus.OK, CaseStatus.OK, CaseStatus.OK, CaseStatus.SKIPPED);
        assertThat(r.results()).extracting(Judge.CaseResult::passed).containsExactly(true, true, false, false);
        assertThat(r.passed()).isEqualTo(2);
        assertThat(r.total()).isEqualTo(4);
        Judge.Result all = judge("cpp", cpp, List.of(new Judge.TestCase(null, "1 1", "3"),
                new Judge.TestCase(null, "2 2", "4")), true);
        assertThat(all.results()).extracting(Judge.CaseResult::passed).containsExactly(false, true);
        Judge.Result broken = judge("cpp", "int main( {", List.of(new Judge.TestCase(null, "", "")), false);
        assertThat(broken.results().getFirst().status()).isEqualTo(CaseStatus.COMPILE_ERROR);
        assertThat(broken.score()).isZero();
    }

    @Test
    void testCodeIsAppendedAndHostileCasesGetTheirVerdict() throws Exception {
        Judge.Result r = JUDGE.evaluate(new Judge.Request("python", "def add(a, b):\n    return a + b\n", List.of(
                new Judge.TestCase("assert add(1, 2) == 3", null, null),
                new Judge.TestCase("print(add('a', 'b'))", null, "ab"),
                new Judge.TestCase("while True: pass", null, null),
                new Judge.TestCase("print('x' * 10_000_000)", null, null),
                new Judge.TestCase("assert add(2, 2) == 5", null, null)), null, true, new LimitsSpec(5000L, null, null,
                null, null), null));
        assertThat(r.results()).as(r.results().toString()).extracting(Judge.CaseResult::status)
                .containsExactly(CaseStatus.OK, CaseStatus.OK, CaseStatus.TIMEOUT, CaseStatus.OUTPUT_LIMIT,
                        CaseStatus.RUNTIME_ERROR);
        assertThat(r.passed()).isEqualTo(2);
        assertThatThrownBy(() -> judge("python", "1", List.of(), false)).isInstanceOf(RequestException.class);
        assertThatThrownBy(() -> JUDGE.evaluate(new Judge.Request("python", "1", List.of(new Judge.TestCase(null, null,
                null)), new Comparison.Spec("fuzzy", null, null), false, null, null)))
                .isInstanceOf(RequestException.class);
    }
}
