package dev.crucible.client;

import java.util.List;
import java.util.Map;

/** The records of {@code POST /v1/evaluate}: judging a program against test cases. */
public final class Evaluation {
    private Evaluation() {}

    /**
     * @param compare a comparison such as {@code Map.of("mode", "numeric", "abs_tol", 1e-6)}, or null for
     *                {@code lines}
     */
    public record Request(String language, String code, List<TestCase> testcases, Map<String, Object> compare,
            Boolean runAllCases, ExecuteRequest.Limits limits, List<ExecuteRequest.FileInput> files, String image) {
        public Request(String language, String code, List<TestCase> testcases, Map<String, Object> compare,
                Boolean runAllCases, ExecuteRequest.Limits limits, List<ExecuteRequest.FileInput> files) {
            this(language, code, testcases, compare, runAllCases, limits, files, null);
        }

        public static Request of(String language, String code, List<TestCase> testcases) {
            return new Request(language, code, testcases, null, null, null, null);
        }

        /** This evaluation run in {@code reference}, an image of the server's store. */
        public Request withImage(String reference) {
            return new Request(language, code, testcases, compare, runAllCases, limits, files, reference);
        }
    }

    /** Test code appended to the program, or stdin with the expected stdout. */
    public record TestCase(String code, String stdin, String expect) {
        public static TestCase code(String testCode) {
            return new TestCase(testCode, null, null);
        }

        public static TestCase io(String stdin, String expect) {
            return new TestCase(null, stdin, expect);
        }
    }

    public record CaseResult(boolean passed, String status, double score, String reason, String stdout,
            String stderr, Integer exitCode, long wallMs) {}

    public record Result(List<CaseResult> results, int passed, int total, double score, ExecuteResult compile,
            String imageDigest) {}
}
