package dev.crucible.eval.dataset;

import dev.crucible.eval.Judge;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A benchmark's problems and how a completion becomes a program, each as its own harness does it (the data README):
 * HumanEval ({@code prompt + completion + "\n" + test + "\ncheck(entry_point)"}), MBPP ({@code code + "\n" +
 * test_setup_code + "\n" + asserts}), stdin/stdout problems (the program run on each test's input, stdout compared
 * line by line) and MultiPL-E ({@code prompt + completion cut at the first stop token + "\n" + tests}).
 */
public final class Dataset {
    static final JsonMapper JSON = JsonMapper.builder().build();

    /** One benchmark problem. */
    public record Problem(String id, String language, String reference, Map<String, Object> fields) {}

    /** A line of a JSONL file that could not be used: its number and why. */
    public record Malformed(Path file, int line, String reason) {
        @Override
        public String toString() {
            return file.getFileName() + ":" + line + ": " + reason;
        }
    }

    /** What a program for one sample is: the source, and the stdin tests to run it on (none: run it once). */
    public record Job(String language, String code, List<Judge.TestCase> tests) {}

    public static final List<String> FORMATS = List.of("humaneval", "mbpp", "stdio", "multipl-e");

    /** MultiPL-E's language codes that have a runtime here. */
    static final Map<String, String> MULTIPL_E = Map.of("cpp", "cpp", "js", "javascript", "sh", "bash", "py", "python");

    private final String format;
    private final Map<String, Problem> problems;
    private final List<Malformed> malformed;

    private Dataset(String format, Map<String, Problem> problems, List<Malformed> malformed) {
        this.format = format;
        this.problems = problems;
        this.malformed = malformed;
    }

    public Map<String, Problem> problems() {
        return problems;
    }

    public List<Malformed> malformed() {
        return malformed;
    }

    public String format() {
        return format;
    }

    /**
     * Reads a problems file (JSONL, gzipped or not). A line that is not a JSON object with the format's fields is
     * recorded as malformed and the rest is read.
     *
     * @throws IllegalArgumentException for an unknown format
     * @throws IOException when the file cannot be read
     */
    public static Dataset load(String format, Path file) throws IOException {
        if (!FORMATS.contains(format)) {
            throw new IllegalArgumentException("unknown format '" + format + "'; one of " + FORMATS);
        }
        Map<String, Problem> problems = new LinkedHashMap<>();
        List<Malformed> malformed = new ArrayList<>();
        forEachLine(file, (number, node) -> {
            Problem p = problem(format, node);
            if (problems.putIfAbsent(p.id(), p) != null) {
                throw new IllegalArgumentException("duplicate id " + p.id());
            }
        }, malformed);
        return new Dataset(format, problems, malformed);
    }

    /** Reads JSONL lines; a line that fails is recorded with its number and reason, the rest go on. */
    static void forEachLine(Path file, LineHandler handler, List<Malformed> malformed) throws IOException {
        try (InputStream raw = Files.newInputStream(file);
                InputStream in = file.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw;
                BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            int number = 0;
            while ((line = reader.readLine()) != null) {
                number++;
                if (line.isBlank()) {
                    continue;
                }
                try {
                    JsonNode node = JSON.readTree(line);
                    if (!node.isObject()) {
                        throw new IllegalArgumentException("not a JSON object");
                    }
                    handler.handle(number, node);
                } catch (RuntimeException e) {
                    String why = e.getMessage() == null ? e.toString() : e.getMessage().lines().findFirst().orElse("");
                    malformed.add(new Malformed(file, number, why.length() > 200 ? why.substring(0, 200) : why));
                }
            }
        }
    }

    @FunctionalInterface
    interface LineHandler {
        void handle(int number, JsonNode node);
    }

    private static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException("missing field '" + field + "'");
        }
        return v.isString() ? v.asString() : v.toString();
    }

    private static String optional(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? "" : v.isString() ? v.asString() : v.toString();
    }

    private static Problem problem(String format, JsonNode n) {
        Map<String, Object> f = new LinkedHashMap<>();
        return switch (format) {
            case "humaneval" -> {
                f.put("prompt", text(n, "prompt"));
                f.put("test", text(n, "test"));
                f.put("entry_point", text(n, "entry_point"));
                yield new Problem(text(n, "task_id"), "python", optional(n, "canonical_solution"), f);
            }
            case "mbpp" -> {
                List<String> asserts = new ArrayList<>();
                JsonNode list = n.get("test_list");
                if (list == null || !list.isArray() || list.isEmpty()) {
                    throw new IllegalArgumentException("missing field 'test_list'");
                }
                list.forEach(t -> asserts.add(t.asString()));
                f.put("tests", String.join("\n", asserts));
                f.put("setup", optional(n, "test_setup_code"));
                f.put("imports", n.has("test_imports") ? String.join("\n", n.get("test_imports").valueStream()
                        .map(JsonNode::asString).toList()) : "");
                yield new Problem(text(n, "task_id"), "python", optional(n, "code"), f);
            }
            case "stdio" -> {
                List<Judge.TestCase> tests = new ArrayList<>();
                JsonNode list = n.get("tests");
                if (list == null || !list.isArray() || list.isEmpty()) {
                    throw new IllegalArgumentException("missing field 'tests'");
                }
                list.forEach(t -> tests.add(new Judge.TestCase(null, text(t, "input") + "\n", text(t, "output"))));
                f.put("tests", tests);
                String language = n.has("language") ? n.get("language").asString() : "python";
                yield new Problem(text(n, n.has("id") ? "id" : "task_id"), language,
                        n.has("solution_python3") ? optional(n, "solution_python3") : optional(n, "solution"), f);
            }
            default -> { // multipl-e
                String code = text(n, "language");
                String language = MULTIPL_E.get(code);
                if (language == null) {
                    throw new IllegalArgumentException("MultiPL-E language '" + code + "' has no runtime here (known: "
                            + MULTIPL_E.keySet() + ")");
                }
                f.put("prompt", text(n, "prompt"));
                f.put("tests", text(n, "tests"));
                List<String> stops = new ArrayList<>();
                if (n.has("stop_tokens")) {
                    n.get("stop_tokens").forEach(s -> stops.add(s.asString()));
                }
                f.put("stop_tokens", stops);
                yield new Problem(text(n, n.has("name") ? "name" : "task_id"), language, "", f);
            }
        };
    }

    /** The program (and stdin tests) of {@code completion} for {@code problem}. */
    @SuppressWarnings("unchecked")
    public Job job(Problem p, String completion) {
        Map<String, Object> f = p.fields();
        return switch (format) {
            case "humaneval" -> new Job("python", f.get("prompt") + completion + "\n" + f.get("test") + "\n"
                    + "check(" + f.get("entry_point") + ")\n", List.of());
            case "mbpp" -> new Job("python", (f.get("imports").toString().isEmpty() ? "" : f.get("imports") + "\n")
                    + completion + "\n" + f.get("setup") + "\n" + f.get("tests") + "\n", List.of());
            case "stdio" -> new Job(p.language(), completion, (List<Judge.TestCase>) f.get("tests"));
            default -> {
                String cut = completion;
                for (String stop : (List<String>) f.get("stop_tokens")) {
                    int at = cut.indexOf(stop);
                    if (at >= 0) {
                        cut = cut.substring(0, at);
                    }
                }
                yield new Job(p.language(), f.get("prompt") + cut + "\n" + f.get("tests") + "\n", List.of());
            }
        };
    }
}
