package dev.crucible.eval.reward;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.eval.Comparison;
import dev.crucible.eval.Judge;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.LimitsSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.json.JsonMapper;

/**
 * The code-execution reward for RL: the code of the last assistant message (a fenced block of the language, else
 * any fence, else the message itself when it looks like code; {@code <think>} and {@code <reasoning>} removed), run in
 * the sandbox, its output compared with the expected output (given, or taken from the prompt's "Expected output:")
 * with partial credit, or run against test cases ({@code score} = the pass rate). Never throws for what the model
 * wrote: a missing block or a crash is a score of 0 with the reason in the metrics.
 */
public final class Reward {
    private static final Pattern FENCE = Pattern.compile("```([\\w+#.-]*)[^\\n]*\\n([\\s\\S]*?)```");
    private static final Pattern THINK = Pattern.compile("(?is)<(think|thinking|reasoning)>.*?</\\1>");
    private static final Pattern CODE_LINE = Pattern.compile(
            "^(\\s*)(def |class |import |from \\S+ import|print\\(|for |while |if |return |const |let |var |function |"
                    + "console\\.|#include|int main|public |fn |package |echo |[A-Za-z_][\\w.]*\\s*=[^=]|[A-Za-z_][\\w.]*\\()");
    public static final int MAX_BATCH = 1000;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final Executor executor;
    private final Judge judge;

    /** Scores with {@code judge}, running on its executor. */
    public Reward(Judge judge) {
        this.executor = judge.executor();
        this.judge = judge;
    }

    /**
     * A chat message in OpenAI's or Anthropic's shape: only {@code role} and {@code content} are read, and whatever
     * else a trainer's conversation carries ({@code name}, {@code tool_calls}, …) is ignored, as those APIs' own
     * messages are taken: the one lenient object of {@code /v1/reward}'s otherwise strict body.
     */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Message(@JsonProperty("role") String role, @JsonProperty("content") Object content) {
        /** The text of the content: a string, or the text parts of a list of parts (OpenAI / Anthropic shapes). */
        String text() {
            if (content instanceof String s) {
                return s;
            }
            if (content instanceof List<?> parts) {
                StringBuilder b = new StringBuilder();
                for (Object p : parts) {
                    if (p instanceof Map<?, ?> m && m.get("text") instanceof String t) {
                        b.append(t).append('\n');
                    } else if (p instanceof String s) {
                        b.append(s).append('\n');
                    }
                }
                return b.toString();
            }
            return content == null ? "" : content.toString();
        }
    }

    public record TestCase(@JsonProperty("input") String input, @JsonProperty("expected_output") String expectedOutput) {}

    public record Request(
            @JsonProperty("messages") List<Message> messages,
            @JsonProperty("expected_output") String expectedOutput,
            @JsonProperty("original_messages") List<Message> originalMessages,
            @JsonProperty("language") String language,
            @JsonProperty("test_cases") List<TestCase> testCases,
            @JsonProperty("timeout_ms") Long timeoutMs,
            @JsonProperty("memory_mb") Integer memoryMb) {}

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Metric(@JsonProperty("score") double score, @JsonProperty("reason") String reason) {}

    public record Result(@JsonProperty("score") double score, @JsonProperty("metrics") Map<String, Metric> metrics) {}

    /** Scores one item. Bad input of the caller (no messages, unknown language, limits) throws; the model's never. */
    public Result score(Request r) throws InterruptedException {
        return score(r, Judge.Gate.OPEN);
    }

    /**
     * As {@link #score(Request)}, each run within a turn of {@code gate}'s.
     *
     * @throws RequestException also when the gate refuses a turn (429/503 with a Retry-After): never a made-up 0
     */
    public Result score(Request r, Judge.Gate gate) throws InterruptedException {
        if (r.messages() == null || r.messages().isEmpty()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "messages is required");
        }
        String language = r.language() == null || r.language().isBlank() ? "python" : r.language();
        LanguageRuntime runtime = executor.runtimeFor(language);
        LimitsSpec limits = new LimitsSpec(r.timeoutMs() == null ? 10_000L : r.timeoutMs(), null, r.memoryMb(), null,
                null);
        Executor.limitsFor(runtime, ExecuteRequest.of(language, "").withLimits(limits)); // validated up front
        Map<String, Metric> metrics = new LinkedHashMap<>();
        Message last = r.messages().getLast();
        if (last == null || !"assistant".equals(last.role())) {
            metrics.put("error", new Metric(0, "the last message is not an assistant message"));
            return new Result(0, metrics);
        }
        String code = extractCode(last.text(), runtime);
        if (code == null) {
            metrics.put("error", new Metric(0, "no code found in the last assistant message"));
            return new Result(0, metrics);
        }
        metrics.put("extracted_code", new Metric(0, code));
        if (r.testCases() != null && !r.testCases().isEmpty()) {
            return testCases(language, code, r.testCases(), limits, metrics, gate);
        }
        String expected = r.expectedOutput() != null ? r.expectedOutput()
                : expectedFromPrompt(r.originalMessages() != null ? r.originalMessages() : r.messages());
        if (expected != null) {
            metrics.put("expected_output", new Metric(0, expected));
        }
        ExecuteResult run = gate.through(limits.timeoutMs(), () -> executor.execute(new ExecuteRequest(language, code,
                null, null, null, limits)));
        String output = run.stdout();
        metrics.put("execution_result", new Metric(run.ok() ? 1 : 0, run.ok() ? output
                : run.status().wireName() + (run.stderr().isBlank() ? "" : ": " + tail(run.stderr()))));
        if (!run.ok()) {
            return new Result(0, metrics);
        }
        if (expected == null) {
            return new Result(1, metrics); // no expectation: it ran
        }
        Comparison.Match m = new Comparison.Partial().compare(expected, output);
        metrics.put("output_match", new Metric(m.score(), m.reason()));
        return new Result(m.score(), metrics);
    }

    private Result testCases(String language, String code, List<TestCase> cases, LimitsSpec limits,
            Map<String, Metric> metrics, Judge.Gate gate) throws InterruptedException {
        List<Judge.TestCase> tests = cases.stream().map(c -> new Judge.TestCase(null, c.input(), c.expectedOutput()))
                .toList();
        Judge.Result result = judge.evaluate(new Judge.Request(language, code, tests, new Comparison.Spec("partial",
                null, null), true, limits, null), gate);
        List<Map<String, Object>> details = new ArrayList<>();
        for (int i = 0; i < cases.size(); i++) {
            Judge.CaseResult c = result.results().get(i);
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("input", cases.get(i).input());
            d.put("expected", cases.get(i).expectedOutput());
            d.put("passed", c.passed());
            d.put("actual_output", c.stdout());
            d.put("status", c.status());
            d.put("score", c.score());
            details.add(d);
        }
        double rate = (double) result.passed() / result.total();
        metrics.put("test_results", new Metric(rate, JSON.writeValueAsString(details)));
        metrics.put("pass_rate", new Metric(rate, String.format(Locale.ROOT, "%d/%d tests passed (%.1f%%)",
                result.passed(), result.total(), 100.0 * rate)));
        return new Result(rate, metrics);
    }

    /** Scores many items at once (each waits for its own sandbox); the results in the items' order. */
    public List<Result> scoreAll(List<Request> items) throws InterruptedException {
        return scoreAll(items, Judge.Gate.OPEN);
    }

    /**
     * As {@link #scoreAll(List)}, {@link Judge.Gate#parallel} items at once, each run within a turn of {@code gate}'s. An
     * item's bad input scores 0 with its error; a turn refused fails the whole batch with its Retry-After, so that a
     * busy server never hands a trainer rewards of 0 it did not earn.
     */
    public List<Result> scoreAll(List<Request> items, Judge.Gate gate) throws InterruptedException {
        if (items == null || items.isEmpty() || items.size() > MAX_BATCH) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "items must hold 1 to " + MAX_BATCH + " requests");
        }
        List<Result> results = new ArrayList<>();
        try (ExecutorService threads = Executors.newFixedThreadPool(Math.min(gate.parallel(), items.size()),
                Thread.ofVirtual().factory())) {
            List<Future<Result>> futures = new ArrayList<>();
            for (Request item : items) {
                futures.add(threads.submit((Callable<Result>) () -> {
                    try {
                        return score(item, gate);
                    } catch (RequestException e) {
                        if (e.retryAfterSeconds() > 0) {
                            throw e; // the server's refusal, not the item's fault
                        }
                        return new Result(0, Map.of("error", new Metric(0, e.getMessage())));
                    }
                }));
            }
            for (Future<Result> f : futures) {
                try {
                    results.add(f.get());
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RequestException refused) {
                        threads.shutdownNow();
                        throw refused;
                    }
                    throw new IllegalStateException("scoring failed", e.getCause());
                }
            }
        }
        return results;
    }

    private static String tail(String s) {
        String t = s.strip();
        return t.length() > 1000 ? "…" + t.substring(t.length() - 1000) : t;
    }

    /** The code to run: the language's fenced block, else any fenced block, else the text if it looks like code. */
    static String extractCode(String message, LanguageRuntime runtime) {
        String text = THINK.matcher(message == null ? "" : message).replaceAll("");
        List<String> names = new ArrayList<>(runtime.aliases());
        names.add(runtime.language());
        names.addAll(runtime.extensions());
        String any = null;
        Matcher m = FENCE.matcher(text);
        while (m.find()) {
            String tag = m.group(1).toLowerCase(Locale.ROOT);
            String body = m.group(2).strip();
            if (body.isEmpty()) {
                continue;
            }
            if (names.contains(tag)) {
                return body;
            }
            if (any == null && (tag.isEmpty() || !isOtherLanguage(tag))) {
                any = body;
            }
        }
        if (any != null) {
            return any;
        }
        String plain = text.strip();
        if (plain.isEmpty() || plain.contains("```")) {
            return null;
        }
        long lines = plain.lines().count();
        long codeLike = plain.lines().filter(l -> l.isBlank() || CODE_LINE.matcher(l).find()).count();
        return codeLike * 2 >= lines + 1 ? plain : null; // mostly code: run it as it is
    }

    /** A fence tagged for output or prose, not for code: skipped when looking for any block. */
    private static boolean isOtherLanguage(String tag) {
        return List.of("text", "txt", "output", "console", "markdown", "md", "json", "plaintext").contains(tag);
    }

    /** The expected output the last user message states, read as {@link ExpectedOutput} does. */
    static String expectedFromPrompt(List<Message> messages) {
        for (int i = messages.size() - 1; i >= 0; i--) {
            Message msg = messages.get(i);
            if (msg == null || !"user".equals(msg.role())) {
                continue;
            }
            return ExpectedOutput.from(msg.text());
        }
        return null;
    }
}
