package dev.crucible.eval.reward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.eval.Judge;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Rewards through the real sandbox. */
class RewardTest {
    static final Reward REWARD = new Reward(new Judge(TestHost.crucible().executor()));

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
