package dev.crucible.cli.eval;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.eval.codex.CodexRunner;
import dev.crucible.eval.codex.CodexScoring;
import dev.crucible.eval.codex.Completions;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.node.ObjectNode;

/** {@code crucible eval …}: evaluation workflows. */
@Command(name = "eval", mixinStandardHelpOptions = true,
        description = "Evaluate code: datasets with pass@k, and the Codex Runner workflow (TOML).",
        subcommands = {DatasetCommand.class, MergeCommand.class, EvalCommand.GenerateCommand.class, EvalCommand.RunTestsCommand.class,
            EvalCommand.WriteResultsCommand.class, EvalCommand.SummaryCommand.class})
public final class EvalCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** Reads a Codex Runner TOML file, or fails with its line and reason. */
    static ObjectNode readToml(Path in) throws IOException {
        if (!Files.isReadable(in)) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + in);
        }
        try {
            return CodexRunner.read(in);
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
        URI baseUrl;

        @Override
        public Integer call() throws Exception {
            PrintWriter err = spec.commandLine().getErr();
            try {
                if (n < 1 || maxTokens < 1 || temperature < 0) {
                    throw new CliSupport.Failure(ExitCodes.USAGE, "--n and --max-tokens must be >= 1, --temperature >= 0");
                }
                var root = readToml(in);
                String key = Completions.apiKey(System.getenv(), Path.of(""));
                if (key == null) {
                    throw new CliSupport.Failure(ExitCodes.INVALID_REQUEST,
                            "no API key: set OPENAI_API_KEY or put OPENAI_API_KEY=... in a .env file here");
                }
                var summary = new Completions().generate(root, new Completions.Options(
                        baseUrl, key, model, n, maxTokens, temperature, 5, Duration.ofMillis(500)));
                CodexRunner.write(root, out);
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
            ObjectNode root;
            try {
                root = readToml(in);
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(err, f);
            }
            return CliSupport.withEngine(err, null, engine -> {
                var summary = new CodexRunner(engine.executor()).runTests(root, timeoutMs);
                CodexRunner.write(root, out);
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
                Files.writeString(out, CodexRunner.report(readToml(in)));
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
                CodexScoring.TestStrategy test;
                CodexScoring.ScoringStrategy scoring;
                try {
                    test = CodexScoring.TestStrategy.of(testStrategy);
                    scoring = CodexScoring.ScoringStrategy.of(scoringStrategy);
                } catch (IllegalArgumentException e) {
                    throw new CliSupport.Failure(ExitCodes.USAGE, e.getMessage());
                }
                Files.writeString(out, CodexScoring.summary(readToml(in), test, scoring));
                return 0;
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(spec.commandLine().getErr(), f);
            }
        }
    }
}
