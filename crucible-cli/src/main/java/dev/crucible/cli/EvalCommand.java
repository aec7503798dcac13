package dev.crucible.cli;

import dev.crucible.Crucible;
import dev.crucible.eval.Dataset;
import dev.crucible.eval.DatasetRun;
import dev.crucible.server.Services;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code crucible eval …}: evaluation workflows. */
@Command(name = "eval", mixinStandardHelpOptions = true,
        description = "Evaluate code: datasets with pass@k, and the Codex Runner workflow (TOML).",
        subcommands = {EvalCommand.DatasetCommand.class, EvalCommand.GenerateCommand.class, EvalCommand.RunTestsCommand.class,
            EvalCommand.WriteResultsCommand.class, EvalCommand.SummaryCommand.class})
final class EvalCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** {@code crucible eval dataset}: a benchmark's samples (or reference solutions) with pass@k, resumable. */
    @Command(name = "dataset", mixinStandardHelpOptions = true,
            description = {"Run a dataset's samples (or, without --samples, its reference solutions) in the sandbox.",
                "Writes one JSON line per sample to --out as it finishes, then a summary line with pass@k.",
                "Run again with the same --out and only the missing samples run."})
    static final class DatasetCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--format", required = true, paramLabel = "F", description = "humaneval, mbpp, stdio or multipl-e.")
        String format;

        @Option(names = "--problems", required = true, paramLabel = "FILE", description = "Problems (JSONL, .gz ok).")
        Path problems;

        @Option(names = "--samples", paramLabel = "FILE", description = "Samples JSONL: {task_id, completion} per line.")
        Path samples;

        @Option(names = "--k", paramLabel = "K,..", defaultValue = "1,10,100", description = "pass@k values (default 1,10,100).")
        String ks;

        @Option(names = "--out", required = true, paramLabel = "FILE", description = "Results JSONL (appended; resumable).")
        Path out;

        @Option(names = {"-c", "--concurrency"}, paramLabel = "N", description = "Samples at once (default 2 × cores).")
        Integer concurrency;

        @Option(names = "--timeout-ms", paramLabel = "MS", defaultValue = "10000", description = "Per program (default 10000).")
        long timeoutMs;

        @Option(names = "--runtimes", paramLabel = "FILE", description = "A runtimes TOML file (env CRUCIBLE_RUNTIMES).")
        Path runtimesFile;

        @Option(names = "--isolation", paramLabel = "MODE", defaultValue = "sample",
                description = {"sample (default): every sample in a sandbox of its own.",
                    "batch: Python samples many to a sandbox, one after another, processes and files reset between two."})
        String isolation;

        @Option(names = "--image", paramLabel = "REF",
                description = "Run every sample in this image of the store (e.g. a per-task image for SWE-style evaluation).")
        String image;

        @Override
        public Integer call() throws Exception {
            PrintWriter err = spec.commandLine().getErr();
            if (!isolation.equals("sample") && !isolation.equals("batch")) {
                return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, "--isolation is sample or batch"));
            }
            PrintWriter stdout = spec.commandLine().getOut();
            List<Integer> kList;
            try {
                kList = Arrays.stream(ks.split(",")).map(String::strip).map(Integer::parseInt).toList();
                if (kList.stream().anyMatch(k -> k < 1)) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, "--k takes positive integers, e.g. 1,10,100"));
            }
            if (!Dataset.FORMATS.contains(format)) {
                return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, "unknown --format '" + format
                        + "'; one of " + Dataset.FORMATS));
            }
            for (Path file : samples == null ? List.of(problems) : List.of(problems, samples)) {
                if (!Files.isReadable(file)) {
                    return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + file));
                }
            }
            int workers = concurrency != null ? concurrency : 2 * Runtime.getRuntime().availableProcessors();
            return CliSupport.withEngine(err, CliSupport.runtimesFile(runtimesFile), engine -> {
                if (image != null) {
                    engine.runtimes().images().require(image); // an unknown image is one line before any sample
                }
                engine.startPool(image == null ? Map.of("python", workers, "javascript", 1)
                        : Map.of("python@" + image, workers, "javascript@" + image, 1));
                boolean terminal = System.console() != null;
                long[] lastLine = {0};
                DatasetRun.Progress progress = (done, total, passed) -> {
                    synchronized (err) {
                        if (terminal) {
                            int width = 30;
                            int filled = total == 0 ? width : (int) ((long) done * width / total);
                            err.printf("\r[%s%s] %d/%d samples, %d passed", "#".repeat(filled), " ".repeat(width - filled),
                                    done, total, passed);
                            if (done == total) {
                                err.println();
                            }
                        } else if (done == total || System.nanoTime() - lastLine[0] > 5_000_000_000L) {
                            lastLine[0] = System.nanoTime();
                            err.printf("crucible: %d/%d samples, %d passed%n", done, total, passed);
                        }
                        err.flush();
                    }
                };
                List<Dataset.Malformed> malformed = new ArrayList<>();
                DatasetRun.Summary summary;
                try {
                    summary = new DatasetRun(Services.stateless(engine).judge(), engine.sandbox()).run(new DatasetRun.Options(format,
                            problems, samples, kList, out, workers, timeoutMs, isolation.equals("batch"), image), progress,
                            malformed);
                } catch (IllegalArgumentException | IOException e) {
                    return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.NO_INPUT, e.getMessage()));
                }
                for (Dataset.Malformed m : malformed) {
                    err.println("crucible: skipped " + m);
                }
                err.flush();
                stdout.println(CliSupport.json().writeValueAsString(Map.of("summary", summary)));
                stdout.flush();
                return 0;
            });
        }
    }

    /** Reads a Codex Runner TOML file, or fails with its line and reason. */
    static tools.jackson.databind.node.ObjectNode readToml(Path in) throws IOException {
        if (!Files.isReadable(in)) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + in);
        }
        try {
            return dev.crucible.eval.CodexRunner.read(in);
        } catch (IllegalArgumentException e) {
            throw new CliSupport.Failure(ExitCodes.INVALID_REQUEST, e.getMessage());
        }
    }

    /** {@code crucible eval generate-completions IN.toml OUT.toml}: completions from an OpenAI-compatible API. */
    @Command(name = "generate-completions", aliases = "gen", mixinStandardHelpOptions = true,
            description = {"Ask an OpenAI-compatible chat completions API for --n completions of each question's",
                "prompt + answer_preload; writes them to OUT as [[questions.completions]] completion = '...'.",
                "The key comes from OPENAI_API_KEY or a .env file in the current directory."})
    static final class GenerateCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Parameters(index = "0", paramLabel = "IN.toml")
        Path in;

        @picocli.CommandLine.Parameters(index = "1", paramLabel = "OUT.toml")
        Path out;

        @Option(names = "--n", defaultValue = "1", description = "Completions per question (default 1).")
        int n;

        @Option(names = "--max-tokens", defaultValue = "256", description = "Default 256.")
        int maxTokens;

        @Option(names = {"--temperature", "--temp"}, defaultValue = "0.9", description = "Default 0.9 (Codex Runner's).")
        double temperature;

        @Option(names = "--model", defaultValue = "gpt-4o-mini", description = "Default gpt-4o-mini.")
        String model;

        @Option(names = "--base-url", defaultValue = "https://api.openai.com/v1",
                description = "Any OpenAI-compatible API (default https://api.openai.com/v1).")
        java.net.URI baseUrl;

        @Override
        public Integer call() throws Exception {
            PrintWriter err = spec.commandLine().getErr();
            try {
                if (n < 1 || maxTokens < 1 || temperature < 0) {
                    throw new CliSupport.Failure(ExitCodes.USAGE, "--n and --max-tokens must be >= 1, --temperature >= 0");
                }
                var root = readToml(in);
                String key = dev.crucible.eval.Completions.apiKey(System.getenv(), Path.of(""));
                if (key == null) {
                    throw new CliSupport.Failure(ExitCodes.INVALID_REQUEST,
                            "no API key: set OPENAI_API_KEY or put OPENAI_API_KEY=... in a .env file here");
                }
                var summary = new dev.crucible.eval.Completions().generate(root, new dev.crucible.eval.Completions.Options(
                        baseUrl, key, model, n, maxTokens, temperature, 5, java.time.Duration.ofMillis(500)));
                dev.crucible.eval.CodexRunner.write(root, out);
                summary.problems().forEach(p -> err.println("crucible: " + p));
                err.printf("crucible: %d completions for %d questions (%d requests, %d retried) written to %s%n",
                        summary.completions(), summary.questions(), summary.requests(), summary.retries(), out);
                err.flush();
                return summary.problems().isEmpty() ? 0 : 1;
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(err, f);
            }
        }
    }

    /** {@code crucible eval run-tests IN.toml OUT.toml}: every completion against its question's test cases. */
    @Command(name = "run-tests", aliases = "test", mixinStandardHelpOptions = true,
            description = {"Run completion + test code with the test's stdin in the sandbox, in parallel; writes",
                "results = [true, false, ...] (v1) or [[questions.completions.test_results]] with got (v2) to OUT."})
    static final class RunTestsCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Parameters(index = "0", paramLabel = "IN.toml")
        Path in;

        @picocli.CommandLine.Parameters(index = "1", paramLabel = "OUT.toml")
        Path out;

        @Option(names = "--timeout-ms", defaultValue = "10000", description = "Per test (default 10000).")
        long timeoutMs;

        @Override
        public Integer call() throws Exception {
            PrintWriter err = spec.commandLine().getErr();
            tools.jackson.databind.node.ObjectNode root;
            try {
                root = readToml(in);
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(err, f);
            }
            return CliSupport.withEngine(err, null, engine -> {
                var summary = new dev.crucible.eval.CodexRunner(engine.executor()).runTests(root, timeoutMs);
                dev.crucible.eval.CodexRunner.write(root, out);
                summary.problems().forEach(p -> err.println("crucible: " + p));
                err.printf("crucible: %d questions, %d completions, %d of %d tests passed; written to %s%n",
                        summary.questions(), summary.completions(), summary.passed(), summary.tests(), out);
                err.flush();
                return 0;
            });
        }
    }

    /** {@code crucible eval write-results IN.toml OUT.csv}: scores out of 1 with mean, median, stdev, min, max. */
    @Command(name = "write-results", mixinStandardHelpOptions = true,
            description = "A CSV: each completion's score out of 1 per question, with mean, median, stdev, min and max.")
    static final class WriteResultsCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Parameters(index = "0", paramLabel = "IN.toml")
        Path in;

        @picocli.CommandLine.Parameters(index = "1", paramLabel = "OUT.csv")
        Path out;

        @Override
        public Integer call() throws Exception {
            try {
                Files.writeString(out, dev.crucible.eval.CodexRunner.report(readToml(in)));
                return 0;
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(spec.commandLine().getErr(), f);
            }
        }
    }

    /** {@code crucible eval summary IN.toml OUT.csv}: Codex Runner's summary CSV, with its test and scoring strategies. */
    @Command(name = "summary", mixinStandardHelpOptions = true,
            description = {"Codex Runner's summary CSV: qid, response 1..n, average, median, stdev, min, max (4 decimals).",
                "--test-strat scores a test (exact; fuzzy_w_cutoff: rapidfuzz ratio >= 90; fuzzy: ratio / 100);",
                "--scoring-strat scores a question (basic: mean per completion; all-or-nothing; expected and",
                "finite-expected: the Moodle CodeRunner penalty scheme over resubmissions)."})
    static final class SummaryCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Parameters(index = "0", paramLabel = "IN.toml")
        Path in;

        @picocli.CommandLine.Parameters(index = "1", paramLabel = "OUT.csv")
        Path out;

        @Option(names = "--test-strat", defaultValue = "exact", paramLabel = "S",
                description = "exact (default), fuzzy_w_cutoff or fuzzy.")
        String testStrategy;

        @Option(names = "--scoring-strat", defaultValue = "basic", paramLabel = "S",
                description = "basic (default), expected, finite-expected or all-or-nothing.")
        String scoringStrategy;

        @Override
        public Integer call() throws Exception {
            try {
                dev.crucible.eval.CodexScoring.TestStrategy test;
                dev.crucible.eval.CodexScoring.ScoringStrategy scoring;
                try {
                    test = dev.crucible.eval.CodexScoring.TestStrategy.of(testStrategy);
                    scoring = dev.crucible.eval.CodexScoring.ScoringStrategy.of(scoringStrategy);
                } catch (IllegalArgumentException e) {
                    throw new CliSupport.Failure(ExitCodes.USAGE, e.getMessage());
                }
                Files.writeString(out, dev.crucible.eval.CodexScoring.summary(readToml(in), test, scoring));
                return 0;
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(spec.commandLine().getErr(), f);
            }
        }
    }
}
