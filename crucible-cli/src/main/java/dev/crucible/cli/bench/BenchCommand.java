package dev.crucible.cli.bench;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Isolation;
import dev.crucible.server.ServerConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible bench}: Python {@code print(1)} (or JavaScript: {@code --language}) through a running server over
 * HTTP (default) or in a cold sandbox of this process ({@code --cold}), against bare {@code python3 -c} (or
 * {@code node -e}) spawns from the same JVM in the same run; prints percentiles, throughput and the ratios.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Benchmark against bare interpreter spawns in the same run.",
            "Default: POST /v1/execute on a running server (--url) with --concurrency clients.",
            "--cold: a cold sandbox in this process, sequential and interleaved.",
            "--checkpoint MB: saving and restoring a gVisor session's sandbox holding MB MiB, in this process."})
public final class BenchCommand implements Callable<Integer> {
    @Option(names = "--url", defaultValue = "http://127.0.0.1:8080", description = "The server (default http://127.0.0.1:8080).")
    String url;

    @Option(names = {"-c", "--concurrency"}, defaultValue = "4", description = "Concurrent clients (default 4).")
    int concurrency;

    @Option(names = "--rounds", defaultValue = "5", description = "Alternating rounds of bare and server (default 5).")
    int rounds;

    @Option(names = "--cold", description = "Benchmark a cold sandbox in this process instead of a server.")
    boolean cold;

    @Option(names = "--humaneval", paramLabel = "FILE",
            description = "Samples per second for a HumanEval file's reference solutions (crucible eval dataset's path)"
                    + " against the same programs as bare sequential python3 runs, in the same run.")
    Path humaneval;

    @Option(names = "--sessions", description = "Benchmark a cell (x + 1) in a live Python session on the server.")
    boolean sessions;

    @Option(names = "--ports", description = "Benchmark HTTP through a session's port proxy against the same GET from"
            + " inside the session's network namespace (a server and engine of this process; needs root).")
    boolean ports;

    @Option(names = "--checkpoint", paramLabel = "MB", description = "Benchmark saving and restoring a gVisor session's"
            + " sandbox holding MB MiB of random bytes (--rounds rounds), in this process.")
    Integer checkpoint;

    @Option(names = "--pause", paramLabel = "MB", description = "With --sessions: pause and resume a session holding MB"
            + " MiB of random bytes instead (--rounds rounds).")
    Integer pause;

    @Option(names = "--idle", paramLabel = "N", defaultValue = "0",
            description = "With --sessions: also hold N idle sessions and measure their memory (default 0).")
    int idle;

    @Option(names = "--hostile-every", paramLabel = "K", defaultValue = "0",
            description = "Every K-th server request is hostile (timeout, fork/memory bomb, flood): a soak (default 0).")
    int hostileEvery;

    @Option(names = "--pause-ms", paramLabel = "MS", defaultValue = "0",
            description = "Think time of each client between its requests, as an agent has (default 0: back to back).")
    long pauseMs;

    @Option(names = "--image", paramLabel = "REF",
            description = "Also time POST /v1/execute in this image of the server's store, against the host runtime"
                    + " (with --sessions --pause: a commit of a session in it).")
    String image;

    @Option(names = "--isolation", paramLabel = "TIER", description = "Also measure POST /v1/execute behind this"
            + " tier (gvisor), alternating with the default one, each against bare python3.")
    String isolation;

    @Option(names = "--token", description = "Bearer token (default: the first of CRUCIBLE_TOKENS).")
    String token;

    @Spec
    CommandSpec spec;

    @Option(names = {"-n", "--iterations"}, defaultValue = "200", description = "Measured runs of each (default 200).")
    int iterations;

    @Option(names = "--warmup", defaultValue = "10", description = "Unmeasured runs of each first (default 10).")
    int warmup;

    @Option(names = "--code", description = "The program (default print(1), or console.log(1) in JavaScript).")
    String code;

    @Option(names = "--language", defaultValue = "python", description = "python (default) or javascript: the"
            + " server's runs and the bare interpreter's (python3 -c, node -e) for the default POST /v1/execute and"
            + " --cold.")
    String language;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (!List.of("python", "javascript").contains(language)) {
            return CliSupport.fail(spec.commandLine().getErr(), new CliSupport.Failure(ExitCodes.USAGE,
                    "--language is python or javascript, not " + language));
        }
        if (code == null) {
            code = language.equals("python") ? "print(1)" : "console.log(1)";
        }
        if (iterations < 1 || warmup < 0 || concurrency < 1 || rounds < 1 || hostileEvery < 0) {
            return CliSupport.fail(spec.commandLine().getErr(), new CliSupport.Failure(ExitCodes.USAGE,
                    "--iterations, --concurrency and --rounds must be >= 1; --warmup and --hostile-every >= 0"));
        }
        if (humaneval != null) {
            return new HumanEvalBench(humaneval, concurrency, rounds,
                    isolation == null ? null : Isolation.parse(isolation))
                    .run(out, spec.commandLine().getErr());
        }
        if (checkpoint != null) {
            if (checkpoint < 1) {
                return CliSupport.fail(spec.commandLine().getErr(), new CliSupport.Failure(ExitCodes.USAGE,
                        "--checkpoint takes the MiB the session holds, >= 1"));
            }
            return CliSupport.withEngine(spec.commandLine().getErr(), null,
                    crucible -> new CheckpointBench().run(out, crucible, checkpoint, rounds));
        }
        if (ports) {
            return CliSupport.withEngine(spec.commandLine().getErr(), null,
                    crucible -> new PortBench().run(out, crucible, iterations, warmup));
        }
        if (sessions) {
            String bearer = token != null ? token : ServerConfig.tokensFrom(
                    System.getenv("CRUCIBLE_TOKENS")).stream().findFirst().orElse(null);
            SessionBench bench = new SessionBench(url, bearer);
            if (pause != null) {
                new PauseBench(bench).run(out, pause, rounds);
                return new SnapshotBench(bench).run(out, image, rounds); // --image: a commit in that image too
            }
            return bench.run(out, iterations, warmup, idle);
        }
        return cold ? coldBench(out) : httpBench(out);
    }

    @SuppressWarnings("checkstyle:JavaNCSS") // one benchmark's script, step by step as it prints
    private int httpBench(PrintWriter out) throws Exception {
        String bearer = token != null ? token
                : ServerConfig.tokensFrom(System.getenv("CRUCIBLE_TOKENS")).stream().findFirst().orElse(null);
        HttpBench bench = new HttpBench(url, bearer);
        JsonNode health;
        try {
            health = bench.health();
        } catch (IOException e) {
            return CliSupport.fail(spec.commandLine().getErr(), new CliSupport.Failure(ExitCodes.NO_INPUT,
                    "no server at " + url + " (start one with ./crucible serve): " + e.getMessage()));
        }
        List<String> bare = bareCommand(RuntimeRegistry.builtIn().find(language).orElseThrow()
                .runCommand().getFirst());
        String body = CliSupport.json().writeValueAsString(Map.of("language", language, "code", code));
        HttpBench.Task server = (i, start) -> {
            if (pauseMs > 0) {
                Thread.sleep(pauseMs);
            }
            start.run();
            String request = hostileEvery > 0 && i % hostileEvery == 0
                    ? HttpBench.HOSTILE.get((i / hostileEvery) % HttpBench.HOSTILE.size()) : body;
            while (!bench.post(request)) {
                Thread.sleep(50); // refused with 429: back off as Retry-After asks, then retry
            }
        };
        HttpBench.measure(warmup, concurrency, server);
        HttpBench.Task spawn = (i, start) -> {
            if (pauseMs > 0) {
                Thread.sleep(pauseMs);
            }
            start.run();
            spawnBare(bare);
        };
        HttpBench.measure(warmup, concurrency, spawn);
        bench.statuses.clear();
        int perRound = Math.max(1, iterations / rounds);
        Map<String, String> variant = new LinkedHashMap<>(Map.of("language", language,
                "code", code));
        if (image != null) {
            variant.put("image", image);
        }
        if (isolation != null) {
            variant.put("isolation", isolation);
        }
        String imageBody = image == null && isolation == null ? null : CliSupport.json().writeValueAsString(variant);
        HttpBench.Task inImage = (i, start) -> {
            start.run();
            while (!bench.post(imageBody)) {
                Thread.sleep(50);
            }
        };
        if (imageBody != null) {
            HttpBench.measure(warmup, concurrency, inImage);
        }
        List<HttpBench.Phase> bares = new ArrayList<>();
        List<HttpBench.Phase> served = new ArrayList<>();
        List<HttpBench.Phase> imaged = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            bares.add(HttpBench.measure(perRound, concurrency, spawn));
            int offset = r * perRound;
            served.add(HttpBench.measure(perRound, concurrency, (i, start) -> server.run(offset + i, start)));
            if (imageBody != null) {
                imaged.add(HttpBench.measure(perRound, concurrency, inImage));
            }
        }
        HttpBench.Phase b = HttpBench.merge(bares);
        HttpBench.Phase s = HttpBench.merge(served);
        out.printf("crucible bench: %s %s, %d requests each, concurrency %d, think time %d ms, %d alternating rounds,"
                + " server %s%n", language, code, perRound * rounds, concurrency, pauseMs, rounds, url);
        out.printf("%-24s %8s %8s %8s %10s%n", "", "p50 ms", "p90 ms", "p99 ms", "req/s");
        HttpBench.report(out, bareLabel(), b);
        HttpBench.report(out, "POST /v1/execute", s);
        out.printf("latency ratio server/bare (p50): %.2f%n", pct(s.latencies(), 50) / pct(b.latencies(), 50));
        out.printf("throughput ratio server/bare: %.2f%n", s.throughput() / b.throughput());
        if (imageBody != null) {
            String what = (image != null ? "image " + image : "") + (isolation != null ? " " + isolation : "");
            HttpBench.Phase m = HttpBench.merge(imaged);
            HttpBench.report(out, "POST /v1/execute " + what.strip(), m);
            out.printf("latency ratio %s/default (p50): %.2f; throughput ratio: %.2f; against bare (p50): %.2f,"
                    + " throughput %.2f%n", what.strip(), pct(m.latencies(), 50) / pct(s.latencies(), 50),
                    m.throughput() / s.throughput(), pct(m.latencies(), 50) / pct(b.latencies(), 50),
                    m.throughput() / b.throughput());
        }
        out.printf("verdicts: %s; 5xx: %d; refused (429/503, retried): %d%n", bench.statusCounts(),
                bench.serverErrors.get(), bench.rejected.get());
        JsonNode after = bench.health();
        out.printf("server: rss %.1f MiB (before the run %.1f MiB), pool ready %d%n",
                after.path("rss_bytes").asLong() / 1048576.0, health.path("rss_bytes").asLong() / 1048576.0,
                after.path("pool_ready").asInt());
        out.flush();
        bench.close();
        return bench.serverErrors.get() == 0 ? 0 : 1;
    }

    private int coldBench(PrintWriter out) throws Exception {
        return CliSupport.withEngine(spec.commandLine().getErr(), null, crucible -> {
            LanguageRuntime runtime = crucible.executor().runtimeFor(language);
            List<String> bare = bareCommand(runtime.runCommand().getFirst());
            ExecuteRequest request = ExecuteRequest.of(language, code);
            long[] sandboxed = new long[iterations];
            long[] spawned = new long[iterations];
            for (int i = -warmup; i < iterations; i++) {
                long t0 = System.nanoTime();
                ExecuteResult r = crucible.executor().execute(request);
                long t1 = System.nanoTime();
                spawnBare(bare);
                long t2 = System.nanoTime();
                if (!r.ok()) {
                    throw new IllegalStateException("sandboxed run failed: " + r.status().wireName() + " " + r.stderr());
                }
                if (i >= 0) {
                    sandboxed[i] = t1 - t0;
                    spawned[i] = t2 - t1;
                }
            }
            out.printf("crucible bench: %s %s, %d interleaved runs each (after %d warm-up)%n", language, code, iterations,
                    warmup);
            out.printf("%-22s %9s %9s %9s%n", "", "p50 ms", "p90 ms", "p99 ms");
            row(out, bareLabel(), spawned);
            row(out, "sandbox (cold)", sandboxed);
            out.printf("ratio sandbox/bare (p50): %.2f%n", pct(sandboxed, 50) / pct(spawned, 50));
            crucible.sandbox().host().describe().forEach(line -> out.println("  " + line));
            out.flush();
            return 0;
        });
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

    private String bareLabel() {
        return language.equals("python") ? "bare python3 -c" : "bare node -e";
    }

    /** The bare interpreter's command line for {@link #code}: {@code python3 -c} or {@code node -e}. */
    private List<String> bareCommand(String interpreter) {
        return List.of(interpreter, language.equals("python") ? "-c" : "-e", code);
    }
}
