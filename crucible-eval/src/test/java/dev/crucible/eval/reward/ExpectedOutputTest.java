package dev.crucible.eval.reward;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * How a prompt's "Expected output" is read: as a person reads it. The first row is the reward seed's own example
 * (reward-kit's local_code_execution_reward guide, "Automatic Output Extraction": the correct program prints 15).
 * In the table {@code \n} stands for a line break and {@code <none>} for no expected output.
 */
class ExpectedOutputTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '~', textBlock = """
            Write a Python function to find the sum of a list. Expected output: 15 (for [1,2,3,4,5]) | 15
            Expected output: 15                                                    | 15
            Expected output: 15.                                                   | 15
            Expected output: 3.14159. Use math.pi.                                  | 3.14159
            The expected output is 42.                                             | 42
            The expected output should be `Hello, World!` exactly.                 | Hello, World!
            Expected output: "Hello, World!"                                       | Hello, World!
            Expected output: 'abc'                                                 | abc
            **Expected output:** 120                                               | 120
            Expected Output -> [1, 2, 3] (a list)                                  | [1, 2, 3]
            expected output = True; print nothing else                             | True
            Expected output for [1,2,3]: 6                                         | 6
            Expected output: 6 for the input [1, 2, 3]                             | 6
            Expected output: 10 given n = 4                                        | 10
            Expected output:\\n15\\n\\nExplain your code.                          | 15
            Expected output:\\n```\\n1\\n2\\nFizz\\n```                            | 1\\n2\\nFizz
            Expected output: ```text\\nyes\\nno\\n```                              | yes\\nno
            Expected output:\\n  a\\n  b\\n\\nThat is all.                         | a\\nb
            Expected output: 1 (first try). Later: expected output: 2 (second)     | 2
            Expected output: 5\\nSecond example. Expected output: 7                | 7
            Print the expected output.                                             | <none>
            Match the expected output format of the sample.                        | <none>
            Expected output: 7\\nPrint the expected output.                        | 7
            Sort the list. Expected output: [1, 2, 3]                              | [1, 2, 3]
            Expected output: -0.5                                                  | -0.5
            No expectation at all here.                                            | <none>
            """)
    void readsTheValueAPersonWouldRead(String prompt, String expected) {
        String text = prompt.strip().replace("\\n", "\n");
        String want = expected.strip().equals("<none>") ? null : expected.strip().replace("\\n", "\n");
        assertThat(ExpectedOutput.from(text)).isEqualTo(want);
    }
}
