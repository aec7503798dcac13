package dev.crucible.eval.codex;

import dev.crucible.eval.TestProof;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.exec.FileInput;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.Verdict;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.dataformat.toml.TomlMapper;

/**
 * The Codex Runner workflow (James-Ansley/codex-runner), both schemas: questions with {@code prompt},
 * {@code answer_preload}, {@code [[questions.testcases]]} ({@code code}, {@code stdin}, {@code expect}) and
 * completions, either v1 ({@code completion}, then {@code results = [true, false, …]}) or v2 ({@code code}, then
 * {@code [[questions.completions.test_results]]} with {@code got}; {@code [[questions.support_files]]} written into
 * the working directory). A test runs {@code completion + "\n\n" + testcase.code} in the sandbox with the test's
 * stdin, {@code input()} echoing what it reads (CodeRunner's convention, as Codex Runner does), stdout and stderr
 * together, and passes when the output equals {@code expect} after stripping both.
 */
public final class CodexRunner {
    static final TomlMapper TOML = new TomlMapper();
    static final String TIMEOUT = "*** TIMEOUT ***";
    /** Codex Runner's input() wrapper: read a line of stdin and echo it, as the student sees it in CodeRunner. */
    static final String ECHO = """
            import builtins as _crucible_builtins
            _crucible_input = _crucible_builtins.input
            def input(prompt=''):
                line = _crucible_input(prompt)
                print(line)
                return line
            _crucible_builtins.input = input
            """;

    private final Executor executor;

    public CodexRunner(Executor executor) {
        this.executor = executor;
    }

    /**
     * Reads a Codex Runner TOML file.
     *
     * @throws IllegalArgumentException with the file's line and the reason when it is not valid TOML or has no
     *     {@code [[questions]]}
     */
    public static ObjectNode read(Path file) throws IOException {
        JsonNode root;
        try {
            root = TOML.readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (JacksonException e) {
            String where = e.getLocation() == null ? "" : ":" + e.getLocation().getLineNr();
            throw new IllegalArgumentException(file + where + ": " + e.getOriginalMessage());
        }
        if (!(root instanceof ObjectNode o) || !root.path("questions").isArray()) {
            throw new IllegalArgumentException(file + ": no [[questions]] array of tables");
        }
        return o;
    }

    public static void write(ObjectNode root, Path file) throws IOException {
        Files.writeString(file, TomlWriter.write(root), StandardCharsets.UTF_8);
    }

    /** What a run-tests pass did. */
    public record Summary(int questions, int completions, int tests, int passed, List<String> problems) {}

    /** Runs every completion of every question against the question's test cases (in parallel) and records results. */
    public Summary runTests(ObjectNode root, long timeoutMs) throws InterruptedException {
        List<String> problems = new ArrayList<>();
        record Run(ObjectNode completion, int index, JsonNode test, TestProof proof, Future<ExecuteResult> result) {}
        List<Run> runs = new ArrayList<>();
        int questions = 0;
        int completions = 0;
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (JsonNode q : root.get("questions")) {
                questions++;
                String id = q.path("id").asString("question " + questions);
                JsonNode tests = q.path("testcases");
                if (!tests.isArray() || tests.isEmpty()) {
                    problems.add(id + ": no testcases");
                    continue;
                }
                List<FileInput> files = new ArrayList<>();
                for (JsonNode f : q.path("support_files")) {
                    files.add(new FileInput(f.path("name").asString(), f.path("text").asString(""), null));
                }
                for (JsonNode c : q.path("completions")) {
                    if (!(c instanceof ObjectNode completion)) {
                        continue;
                    }
                    completions++;
                    String code = completion.has("completion") ? completion.get("completion").asString("")
                            : completion.path("code").asString("");
                    boolean v1 = completion.has("completion");
                    ArrayNode slots = completion.putArray(v1 ? "results" : "test_results"); // a rerun replaces them
                    for (int i = 0; i < tests.size(); i++) {
                        if (v1) {
                            slots.add(false);
                        } else {
                            slots.addObject();
                        }
                    }
                    int index = 0;
                    for (JsonNode t : tests) {
                        TestProof proof = TestProof.fresh(); // the test code must be seen to run to its end
                        String program = proof.seal("python", ECHO + code + "\n\n" + t.path("code").asString(""));
                        ExecuteRequest request = new ExecuteRequest("python", program, t.path("stdin").asString(""), null,
                                files.isEmpty() ? null : files, new LimitsSpec(timeoutMs, null, null, null, null));
                        runs.add(new Run(completion, index++, t, proof, threads.submit((Callable<ExecuteResult>) () -> {
                            ExecuteResult r = executor.execute(request);
                            // a sandbox error is ours, never the completion's: it gets one more try
                            return r.status() == Verdict.SANDBOX_ERROR ? executor.execute(request) : r;
                        })));
                    }
                }
            }
            int passed = 0;
            for (Run run : runs) {
                ExecuteResult r;
                try {
                    r = run.result().get();
                } catch (ExecutionException e) {
                    problems.add("a test could not run: " + e.getCause().getMessage());
                    continue;
                }
                boolean proven = run.proof().proven(r);
                String got = got(run.proof().strip(r));
                if (r.ok() && !proven) { // v2 scores by `got`: say why it is not what the tests printed
                    got += "\n[crucible: " + TestProof.INCOMPLETE + "]";
                }
                boolean ok = proven // the test code ran to its end, and printed what was expected
                        && got.strip().equals(run.test().path("expect").asString("").strip());
                passed += ok ? 1 : 0;
                record(run.completion(), run.index(), run.test(), got, ok);
            }
            return new Summary(questions, completions, runs.size(), passed, problems);
        }
    }

    /** Stdout and stderr together, as the original merged them; a timeout reads as Codex Runner writes it. */
    static String got(ExecuteResult r) {
        if (r.status() == Verdict.TIMEOUT) {
            return TIMEOUT;
        }
        if (r.status() == Verdict.SANDBOX_ERROR) {
            return "[crucible could not run this test: " + r.message() + "]";
        }
        String out = r.stdout() + r.stderr();
        while (out.endsWith("\n")) {
            out = out.substring(0, out.length() - 1);
        }
        return out;
    }

    /** v1: {@code results[index] = passed}; v2: {@code test_results[index]} with {@code got}. */
    private static synchronized void record(ObjectNode completion, int index, JsonNode test, String got, boolean ok) {
        if (completion.has("completion")) {
            ((ArrayNode) completion.get("results")).set(index, ok);
        } else {
            ObjectNode r = (ObjectNode) completion.get("test_results").get(index);
            r.put("code", test.path("code").asString(""));
            r.put("stdin", test.path("stdin").asString(""));
            r.put("expect", test.path("expect").asString(""));
            r.put("got", got);
        }
    }

    /**
     * The report: a row per question with each completion's score out of 1 (passing tests / tests), then mean,
     * median, standard deviation, min and max; a last row over every completion.
     */
    public static String report(ObjectNode root) {
        List<List<Double>> rows = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        int widest = 0;
        for (JsonNode q : root.get("questions")) {
            List<Double> scores = new ArrayList<>();
            for (JsonNode c : q.path("completions")) {
                scores.add(score(c, q.path("testcases").size()));
            }
            ids.add(q.path("id").asString(""));
            rows.add(scores);
            widest = Math.max(widest, scores.size());
        }
        StringBuilder csv = new StringBuilder("question");
        for (int i = 1; i <= widest; i++) {
            csv.append(",completion_").append(i);
        }
        csv.append(",mean,median,stdev,min,max\n");
        List<Double> all = new ArrayList<>();
        for (int r = 0; r < rows.size(); r++) {
            csv.append(csvField(ids.get(r)));
            List<Double> scores = rows.get(r);
            for (int i = 0; i < widest; i++) {
                csv.append(',').append(i < scores.size() ? number(scores.get(i)) : "");
            }
            csv.append(stats(scores)).append('\n');
            all.addAll(scores);
        }
        csv.append("overall").append(",".repeat(widest)).append(stats(all)).append('\n');
        return csv.toString();
    }

    static double score(JsonNode completion, int tests) {
        if (completion.has("results") && completion.get("results").isArray() && !completion.get("results").isEmpty()) {
            JsonNode r = completion.get("results");
            return r.valueStream().filter(JsonNode::asBoolean).count() / (double) r.size();
        }
        JsonNode results = completion.path("test_results");
        if (results.isArray() && !results.isEmpty()) {
            long ok = results.valueStream().filter(t -> t.path("got").asString("").strip()
                    .equals(t.path("expect").asString("").strip())).count();
            return ok / (double) results.size();
        }
        return 0.0;
    }

    private static String stats(List<Double> xs) {
        if (xs.isEmpty()) {
            return ",,,,,";
        }
        double[] sorted = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        double mean = Arrays.stream(sorted).average().orElse(0);
        double median = sorted.length % 2 == 1 ? sorted[sorted.length / 2]
                : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
        double variance = sorted.length < 2 ? 0
                : Arrays.stream(sorted).map(x -> (x - mean) * (x - mean)).sum() / (sorted.length - 1);
        return "," + number(mean) + "," + number(median) + "," + number(Math.sqrt(variance)) + ","
                + number(sorted[0]) + "," + number(sorted[sorted.length - 1]);
    }

    private static String number(double d) {
        return String.format(Locale.ROOT, "%.4f", d);
    }

    private static String csvField(String s) {
        return s.contains(",") || s.contains("\"") || s.contains("\n") ? "\"" + s.replace("\"", "\"\"") + "\"" : s;
    }
}
