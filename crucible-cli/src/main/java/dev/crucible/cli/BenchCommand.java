package dev.crucible.cli;

import dev.crucible.Crucible;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LanguageRuntime;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code crucible bench}: Python {@code print(1)} in a cold sandbox against a bare {@code python3 -c} spawn from
 * the same JVM, interleaved in one run so that both see the same machine; prints percentiles and the ratio.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Benchmark a cold sandboxed run against a bare interpreter spawn (interleaved, same run).")
final class BenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-n", "--iterations"}, defaultValue = "100", description = "Measured runs of each (default 100).")
    int iterations;

    @Option(names = "--warmup", defaultValue = "10", description = "Unmeasured runs of each first (default 10).")
    int warmup;

    @Option(names = "--code", defaultValue = "print(1)", description = "The Python program (default print(1)).")
    String code;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (iterations < 1 || warmup < 0) {
            return CliSupport.fail(spec.commandLine().getErr(),
                    new CliSupport.Failure(ExitCodes.USAGE, "--iterations must be >= 1 and --warmup >= 0"));
        }
        try (Crucible crucible = CliSupport.start(null)) {
            LanguageRuntime python = crucible.executor().runtimeFor("python");
            List<String> bare = List.of(python.runCommand().getFirst(), "-c", code);
            ExecuteRequest request = ExecuteRequest.of("python", code);
            long[] sandboxed = new long[iterations];
            long[] spawned = new long[iterations];
            for (int i = -warmup; i < iterations; i++) {
                long t0 = System.nanoTime();
                ExecuteResult r = crucible.executor().execute(request);
                long t1 = System.nanoTime();
                spawnBare(bare);
                long t2 = System.nanoTime();
                if (!r.ok()) {
                    throw new IllegalStateException("sandboxed run failed: " + r.status() + " " + r.stderr());
                }
                if (i >= 0) {
                    sandboxed[i] = t1 - t0;
                    spawned[i] = t2 - t1;
                }
            }
            out.printf("crucible bench: python %s, %d interleaved runs each (after %d warm-up)%n", code, iterations,
                    warmup);
            out.printf("%-22s %9s %9s %9s%n", "", "p50 ms", "p90 ms", "p99 ms");
            row(out, "bare python3 -c", spawned);
            row(out, "sandbox (cold)", sandboxed);
            out.printf("ratio sandbox/bare (p50): %.2f%n", pct(sandboxed, 50) / pct(spawned, 50));
            crucible.sandbox().describe().forEach(line -> out.println("  " + line));
            out.flush();
            return 0;
        }
    }

    private static void spawnBare(List<String> argv) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(argv);
        pb.environment().clear();
        Process p = pb.start();
        p.getOutputStream().close();
        p.getInputStream().readAllBytes();
        p.getErrorStream().readAllBytes();
        p.waitFor();
    }

    private static void row(PrintWriter out, String name, long[] nanos) {
        out.printf("%-22s %9.2f %9.2f %9.2f%n", name, pct(nanos, 50), pct(nanos, 90), pct(nanos, 99));
    }

    static double pct(long[] nanos, int p) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(index, sorted.length - 1))] / 1e6;
    }
}
