package dev.crucible.cli.eval;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.eval.dataset.Dataset;
import dev.crucible.eval.dataset.DatasetRun;
import dev.crucible.eval.dataset.RemoteCrucible;
import dev.crucible.eval.dataset.Sandboxes;
import dev.crucible.eval.dataset.Shard;
import dev.crucible.server.services.Services;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
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

/** {@code crucible eval dataset}: a benchmark's samples (or reference solutions) with pass@k, resumable. */
@Command(name = "dataset", mixinStandardHelpOptions = true,
        description = {"Run a dataset's samples (or, without --samples, its reference solutions) in the sandbox.",
            "Writes one JSON line per sample to --out as it finishes, then a summary line with pass@k.",
            "Run again with the same --out and only the missing samples run.",
            "With --url the samples are judged by a remote Crucible (a server, or replicas behind a balancer)."})
final class DatasetCommand implements Callable<Integer> {
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

    @Option(names = {"-c", "--concurrency"}, paramLabel = "N",
            description = "Samples at once (default 2 × cores; with --url: what /healthz says, and N caps it).")
    Integer concurrency;

    @Option(names = "--timeout-ms", paramLabel = "MS", defaultValue = "10000", description = "Per program (default 10000).")
    long timeoutMs;

    @Option(names = "--runtimes", paramLabel = "FILE", description = "A runtimes TOML file (env CRUCIBLE_RUNTIMES).")
    Path runtimesFile;

    @Option(names = "--isolation", paramLabel = "MODE", defaultValue = "sample", hidden = true,
            description = "sample: every sample in a sandbox of its own, the only mode (batch was removed).")
    String isolation;

    @Option(names = "--image", paramLabel = "REF",
            description = "Run every sample in this image of the store (e.g. a per-task image for SWE-style evaluation).")
    String image;

    @Option(names = "--url", paramLabel = "URL",
            description = {"Judge on a remote Crucible (http://host[:port]; a balancer over replicas) instead of here:",
                "one POST /v1/execute or /v1/evaluate per sample, retried when no answer came."})
    URI url;

    @Option(names = "--token", paramLabel = "T", description = "Bearer token for --url (env CRUCIBLE_TOKEN).")
    String token;

    @Option(names = "--attempts", paramLabel = "N", defaultValue = "8",
            description = "With --url: tries per sample before it is left unjudged (default 8, about 30 s of back-off).")
    int attempts;

    @Option(names = "--shard", paramLabel = "I/N",
            description = {"Run only the samples whose position (from 0, in file order) is I modulo N; I counts from 0",
                "(a Kubernetes Indexed Job's JOB_COMPLETION_INDEX). Merge the shards' --out files with eval merge."})
    String shard;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        try {
            DatasetRun.Options options = options();
            if (isolation.equals("batch")) { // a script written for the mode that was removed keeps working
                err.println("crucible: --isolation batch is gone: every sample gets a sandbox of its own (a zygote's"
                        + " child), now as fast; running so");
                err.flush();
            }
            if (url == null) {
                return local(options, err);
            }
            return remote(options, err);
        } catch (CliSupport.Failure f) {
            return CliSupport.fail(err, f);
        }
    }

    private DatasetRun.Options options() {
        if (!isolation.equals("sample") && !isolation.equals("batch")) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "--isolation is sample (every sample in a sandbox of its own)");
        }
        if (url != null && runtimesFile != null) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "with --url the remote server's runtimes judge every sample:"
                    + " --runtimes is for local runs");
        }
        if (attempts < 1 || (concurrency != null && concurrency < 1)) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "--attempts and --concurrency must be at least 1");
        }
        List<Integer> kList = ks(ks);
        if (!Dataset.FORMATS.contains(format)) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "unknown --format '" + format + "'; one of " + Dataset.FORMATS);
        }
        Shard part;
        try {
            part = shard == null ? null : Shard.parse(shard);
        } catch (IllegalArgumentException e) {
            throw new CliSupport.Failure(ExitCodes.USAGE, e.getMessage());
        }
        for (Path file : samples == null ? List.of(problems) : List.of(problems, samples)) {
            if (!Files.isReadable(file)) {
                throw new CliSupport.Failure(ExitCodes.NO_INPUT, "cannot read " + file);
            }
        }
        int workers = concurrency != null ? concurrency : 2 * Runtime.getRuntime().availableProcessors();
        return new DatasetRun.Options(format, problems, samples, kList, out, workers, timeoutMs, image, part);
    }

    /** {@code --k}'s list, or a usage failure. */
    static List<Integer> ks(String text) {
        try {
            List<Integer> list = Arrays.stream(text.split(",")).map(String::strip).map(Integer::parseInt).toList();
            if (list.stream().anyMatch(k -> k < 1)) {
                throw new NumberFormatException();
            }
            return list;
        } catch (NumberFormatException e) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "--k takes positive integers, e.g. 1,10,100");
        }
    }

    private int local(DatasetRun.Options o, PrintWriter err) throws Exception {
        return CliSupport.withEngine(err, CliSupport.runtimesFile(runtimesFile), engine -> {
            if (image != null) {
                engine.runtimes().images().require(image); // an unknown image is one line before any sample
            }
            int workers = o.concurrency();
            engine.startPool(image == null ? Map.of("python", workers, "javascript", 1)
                    : Map.of("python@" + image, workers, "javascript@" + image, 1));
            return run(new DatasetRun(Services.stateless(engine).judge()), o, err);
        });
    }

    private int remote(DatasetRun.Options o, PrintWriter err) throws Exception {
        String bearer = token != null ? token : System.getenv("CRUCIBLE_TOKEN");
        RemoteCrucible remote;
        try {
            remote = RemoteCrucible.connect(RemoteCrucible.Options.of(url, bearer).withAttempts(attempts)
                    .withMaxConcurrency(concurrency == null ? 0 : concurrency));
        } catch (IllegalArgumentException e) {
            throw new CliSupport.Failure(ExitCodes.USAGE, "--url: " + e.getMessage());
        } catch (Sandboxes.NoVerdict e) {
            throw new CliSupport.Failure(e.fatal() ? ExitCodes.ENDPOINT_UNAUTHORIZED : ExitCodes.ENDPOINT_UNREACHABLE,
                    url + ": " + e.getMessage());
        }
        err.printf("crucible: judging on %s, %d samples at once (its /healthz: max_running + max_queued)%n", url,
                remote.concurrency());
        err.flush();
        int exit = run(new DatasetRun(remote), o, err);
        if (!remote.retries().isEmpty()) {
            err.println("crucible: requests sent again: " + remote.retries());
            err.flush();
        }
        return exit;
    }

    private int run(DatasetRun runner, DatasetRun.Options o, PrintWriter err) throws Exception {
        PrintWriter stdout = spec.commandLine().getOut();
        List<Dataset.Malformed> malformed = new ArrayList<>();
        List<DatasetRun.Unjudged> unjudged = new ArrayList<>();
        DatasetRun.Summary summary;
        try {
            summary = runner.run(o, progress(err), malformed, unjudged);
        } catch (IllegalArgumentException | IOException e) {
            throw new CliSupport.Failure(ExitCodes.NO_INPUT, e.getMessage());
        }
        for (Dataset.Malformed m : malformed) {
            err.println("crucible: skipped " + m);
        }
        unjudged.stream().limit(5).forEach(u -> err.println("crucible: no verdict for " + u.id() + ": " + u.reason()));
        err.flush();
        stdout.println(CliSupport.json().writeValueAsString(Map.of("summary", summary)));
        stdout.flush();
        if (summary.unjudged() > 0) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.UNJUDGED, summary.unjudged() + " of "
                    + summary.samples() + " samples got no verdict (the endpoint failed, not the samples); run the same"
                    + " command again: only they run"));
        }
        return 0;
    }

    /** A bar on a terminal, a line every 5 s otherwise. */
    static DatasetRun.Progress progress(PrintWriter err) {
        boolean terminal = System.console() != null;
        long[] lastLine = {0};
        return (done, total, passed) -> {
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
    }
}
