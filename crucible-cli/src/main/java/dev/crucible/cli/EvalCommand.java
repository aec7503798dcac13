package dev.crucible.cli;

import dev.crucible.Crucible;
import dev.crucible.eval.Dataset;
import dev.crucible.eval.DatasetRun;
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
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code crucible eval …}: evaluation workflows. */
@Command(name = "eval", mixinStandardHelpOptions = true, description = "Evaluate code: datasets with pass@k.",
        subcommands = {EvalCommand.DatasetCommand.class})
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

        @Override
        public Integer call() throws Exception {
            PrintWriter err = spec.commandLine().getErr();
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
            Crucible engine;
            try {
                engine = CliSupport.start(CliSupport.runtimesFile(runtimesFile));
            } catch (CliSupport.Failure f) {
                return CliSupport.fail(err, f);
            }
            try (engine) {
                engine.startPool(Map.of("python", workers, "javascript", 1));
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
                    summary = new DatasetRun(engine.executor()).run(new DatasetRun.Options(format, problems, samples,
                            kList, out, workers, timeoutMs), progress, malformed);
                } catch (IllegalArgumentException | IOException e) {
                    return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.NO_INPUT, e.getMessage()));
                }
                for (Dataset.Malformed m : malformed) {
                    err.println("crucible: skipped " + m);
                }
                err.flush();
                stdout.println(CliSupport.JSON.writeValueAsString(Map.of("summary", summary)));
                stdout.flush();
                return 0;
            }
        }
    }
}
