package dev.crucible.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.error.RequestException;
import dev.crucible.TestHost;
import dev.crucible.runtime.LimitsSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Judging and rewards through the real sandbox. */
class JudgeAndRewardTest {
    static final Judge JUDGE = new Judge(TestHost.crucible().executor());
    static final Reward REWARD = new Reward(new Judge(TestHost.crucible().executor()));

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
        assertThat(r.results()).extracting(Judge.CaseResult::status).containsExactly("ok", "ok", "ok", "skipped");
        assertThat(r.results()).extracting(Judge.CaseResult::passed).containsExactly(true, true, false, false);
        assertThat(r.passed()).isEqualTo(2);
        assertThat(r.total()).isEqualTo(4);
        Judge.Result all = judge("cpp", cpp, List.of(new Judge.TestCase(null, "1 1", "3"),
                new Judge.TestCase(null, "2 2", "4")), true);
        assertThat(all.results()).extracting(Judge.CaseResult::passed).containsExactly(false, true);
        Judge.Result broken = judge("cpp", "int main( {", List.of(new Judge.TestCase(null, "", "")), false);
        assertThat(broken.results().getFirst().status()).isEqualTo("compile_error");
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
        assertThat(r.results()).extracting(Judge.CaseResult::status)
                .containsExactly("ok", "ok", "timeout", "output_limit", "runtime_error");
        assertThat(r.passed()).isEqualTo(2);
        assertThatThrownBy(() -> judge("python", "1", List.of(), false)).isInstanceOf(RequestException.class);
        assertThatThrownBy(() -> JUDGE.evaluate(new Judge.Request("python", "1", List.of(new Judge.TestCase(null, null,
                null)), new Comparison.Spec("fuzzy", null, null), false, null, null)))
                .isInstanceOf(RequestException.class);
    }

    static Reward.Request reward(String assistant, String expected, List<Reward.TestCase> cases, String user) {
        return new Reward.Request(List.of(new Reward.Message("user", user), new Reward.Message("assistant", assistant)),
                expected, null, null, cases, 5000L, null);
    }

    @Test
    void rewardExtractsRunsAndScoresWithPartialCredit() throws Exception {
        String answer = "<think>maybe ```python\nprint('wrong')\n```</think>Here it is:\n```python\nprint(6 * 7)\n```\nDone.";
        Reward.Result r = REWARD.score(reward(answer, "42", null, "Compute 6*7"));
        assertThat(r.score()).isEqualTo(1.0);
        assertThat(r.metrics().get("extracted_code").reason()).isEqualTo("print(6 * 7)");
        assertThat(r.metrics().get("execution_result").score()).isEqualTo(1.0);
        assertThat(r.metrics()).containsKeys("expected_output", "output_match");

        // expected output from the prompt; a near miss gets partial credit
        Reward.Result near = REWARD.score(reward("```\nprint(105)\n```", null, null,
                "Print a number.\nExpected output: 100"));
        assertThat(near.metrics().get("expected_output").reason()).isEqualTo("100");
        assertThat(near.score()).isEqualTo(0.7);

        // the reward seed's own example (reward-kit's guide, "Automatic Output Extraction"): the correct program
        // scores 1, not the 0.06 a whole-line reading gave
        Reward.Result seed = REWARD.score(reward("```python\ndef sum_list(numbers):\n    return sum(numbers)\n\n"
                + "print(sum_list([1, 2, 3, 4, 5]))\n```", null, null,
                "Write a Python function to find the sum of a list. Expected output: 15 (for [1,2,3,4,5])"));
        assertThat(seed.metrics().get("expected_output").reason()).isEqualTo("15");
        assertThat(seed.score()).isEqualTo(1.0);

        // no fence: code-looking text runs as it is; prose does not
        assertThat(REWARD.score(reward("x = 2\nprint(x + 1)", "3", null, "q")).score()).isEqualTo(1.0);
        Reward.Result prose = REWARD.score(reward("I cannot answer that.", "3", null, "q"));
        assertThat(prose.score()).isZero();
        assertThat(prose.metrics().get("error").reason()).contains("no code");

        // a crash or a bomb is a 0 with the reason, never an exception
        Reward.Result crash = REWARD.score(reward("```python\nraise SystemExit(3)\n```", "1", null, "q"));
        assertThat(crash.score()).isZero();
        assertThat(crash.metrics().get("execution_result").reason()).startsWith("runtime_error");
        Reward.Result hog = REWARD.score(new Reward.Request(List.of(new Reward.Message("assistant",
                "```python\nx = bytearray(400 << 20)\nprint(1)\n```")), "1", null, null, null, 5000L, 64));
        assertThat(hog.score()).isZero(); // the memory limit is honoured (reward-kit ignored it)
        assertThat(hog.metrics().get("execution_result").reason()).startsWith("memory_limit");

        // JavaScript, picked by its fence among others
        Reward.Result js = REWARD.score(new Reward.Request(List.of(new Reward.Message("assistant",
                "```python\nprint(0)\n```\n```javascript\nconsole.log([1,2].map(x => x * 2).join(' '))\n```")),
                "2 4", null, "javascript", null, 5000L, null));
        assertThat(js.score()).isEqualTo(1.0);
    }

    @Test
    void rewardWithTestCasesIsThePassRateAndBatchesRunTogether() throws Exception {
        String code = "```python\nn = int(input())\nprint(n * n)\n```";
        Reward.Result r = REWARD.score(reward(code, null, List.of(new Reward.TestCase("3", "9"),
                new Reward.TestCase("4", "16"), new Reward.TestCase("5", "26")), "square it"));
        assertThat(r.score()).isEqualTo(2.0 / 3);
        assertThat(r.metrics().get("pass_rate").reason()).isEqualTo("2/3 tests passed (66.7%)");
        assertThat(r.metrics().get("test_results").reason()).contains("\"actual_output\":\"25\\n\"");

        List<Reward.Result> batch = REWARD.scoreAll(List.of(reward("```python\nprint(1)\n```", "1", null, "q"),
                new Reward.Request(List.of(new Reward.Message("user", "hi")), "1", null, null, null, null, null),
                reward("```python\nprint(2)\n```", "1", null, "q"),
                new Reward.Request(List.of(new Reward.Message("assistant", "print(1)")), null, null, "cobol", null,
                        null, null)));
        assertThat(batch).extracting(Reward.Result::score).containsExactly(1.0, 0.0, 0.0, 0.0);
        assertThat(batch.get(1).metrics().get("error").reason()).contains("not an assistant");
        assertThat(batch.get(3).metrics().get("error").reason()).contains("unknown language");
    }
}
