package dev.crucible.cli.bench;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.eval.Judge;
import dev.crucible.eval.dataset.Dataset;
import dev.crucible.eval.dataset.DatasetRun;
import dev.crucible.image.Images;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Isolation;
import dev.crucible.server.services.Services;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code crucible bench --humaneval FILE [--isolation gvisor]}: the dataset's reference solutions through {@code crucible
 * eval dataset}'s path (a sandbox per sample from a warm pool of {@code workers}), against the same programs as bare
 * sequential {@code python3} spawns from this JVM, in alternating rounds; with {@code --isolation}, a second engine
 * whose runtimes default to that tier runs the same dataset in the same rounds.
 */
final class HumanEvalBench {
    private final Path file;
    private final int workers;
    private final int rounds;
    private final Isolation tier;

    HumanEvalBench(Path file, int workers, int rounds, Isolation tier) {
        this.file = file;
        this.workers = workers;
        this.rounds = rounds;
        this.tier = tier == Isolation.NAMESPACES ? null : tier;
    }

    int run(PrintWriter out, PrintWriter err) throws Exception {
        Dataset dataset = Dataset.load("humaneval", file);
        Path dir = Files.createTempDirectory("crucible-bench-");
        List<Path> programs = new ArrayList<>();
        for (var p : dataset.problems().values()) {
            Path program = dir.resolve(programs.size() + ".py");
            Files.writeString(program, dataset.job(p, p.reference()).code());
            programs.add(program);
        }
        String python = RuntimeRegistry.builtIn().find("python").orElseThrow().runCommand()
                .getFirst();
        return CliSupport.withEngine(err, null, engine -> tier == null ? measure(out, python, programs, dir, engine, null)
                : CliSupport.withEngine(err, null, () -> CliSupport.images(null,
                        Images.PullPolicy.never()), config -> config.withIsolation(tier),
                        second -> measure(out, python, programs, dir, engine, second)));
    }

    private int measure(PrintWriter out, String python, List<Path> programs, Path dir, Crucible engine,
            Crucible second) throws Exception {
        List<Crucible> engines = second == null ? List.of(engine) : List.of(engine, second);
        List<Judge> judges = new ArrayList<>();
        for (Crucible e : engines) {
            e.startPool(Map.of("python", workers));
            judges.add(Services.stateless(e).judge());
        }
        Thread.sleep(second == null ? 1000 : 5000); // the pools fill
        double[] bare = new double[rounds];
        double[][] sandboxed = new double[engines.size()][rounds];
        int passedBare = 0;
        int[] passed = new int[engines.size()];
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            passedBare = 0;
            for (Path program : programs) {
                Process p = new ProcessBuilder(python, program.toString()).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                passedBare += p.waitFor() == 0 ? 1 : 0;
            }
            bare[r] = (System.nanoTime() - t0) / 1e9;
            for (int k = 0; k < engines.size(); k++) {
                Path results = dir.resolve("results-" + r + "-" + k + ".jsonl");
                t0 = System.nanoTime();
                var summary = new DatasetRun(judges.get(k)).run(new DatasetRun.Options("humaneval", file, null,
                        List.of(1), results, workers, 10_000), DatasetRun.Progress.NONE, new ArrayList<>());
                sandboxed[k][r] = (System.nanoTime() - t0) / 1e9;
                passed[k] = summary.passed();
            }
        }
        double b = Figures.median(bare);
        int n = programs.size();
        out.printf("crucible bench --humaneval: %d reference solutions, median of %d alternating rounds, %d workers%n",
                n, rounds, workers);
        out.printf("%-40s %6.2f s  %6.1f samples/s  (%d passed)%n", "bare sequential python3:", b, n / b, passedBare);
        double base = Figures.median(sandboxed[0]);
        for (int k = 0; k < engines.size(); k++) {
            double s = Figures.median(sandboxed[k]);
            String what = k == 0 ? "crucible eval dataset (namespaces):" : "crucible eval dataset (" + tier.wire()
                    + "):";
            out.printf("%-40s %6.2f s  %6.1f samples/s  (%d passed)  time ratio to bare %.2f%s%n", what, s, n / s,
                    passed[k], s / b, k == 0 ? "" : String.format(", to namespaces %.2f", s / base));
        }
        out.flush();
        return 0;
    }
}
