package dev.crucible.client;

import java.util.List;
import java.util.Map;

/** The records of {@code POST /v1/reward} and {@code /v1/reward/batch}: scoring a model's reply by running its code. */
public final class Rewards {
    private Rewards() {}

    public record Message(String role, String content) {}

    public record TestCase(String input, String expectedOutput) {}

    public record Request(List<Message> messages, String expectedOutput, List<Message> originalMessages,
            String language, List<TestCase> testCases, Long timeoutMs, Integer memoryMb) {

        public static Request of(List<Message> messages, String expectedOutput) {
            return new Request(messages, expectedOutput, null, null, null, null, null);
        }
    }

    public record Metric(double score, String reason) {}

    public record Result(double score, Map<String, Metric> metrics) {}

    public record BatchResult(List<Result> results, double meanScore) {}
}
