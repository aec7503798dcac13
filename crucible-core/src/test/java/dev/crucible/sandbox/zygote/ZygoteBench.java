package dev.crucible.sandbox.zygote;

import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Prints what a run of {@code print(1)} costs on the launcher alone, without HTTP or the executor (a benchmark: run on
 * purpose, never by the test suite): a child forked by the zygote, a spawned sandbox of the same warm-pool agent, and a
 * bare {@code python3 -c} with no sandbox, in alternating rounds, at concurrency 1 and 4. Needs root. Usage:
 * {@code java -cp classes:test-classes:DEPS dev.crucible.sandbox.zygote.ZygoteBench [RUNS [--zygote-only]]} (the latter for a
 * profiler: forked runs only).
 */
final class ZygoteBench {
    private ZygoteBench() {}

    interface Run {
        void once() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        try (BwrapSandbox forked = BwrapSandbox.create(SandboxConfig.defaults().withSlots(8));
                BwrapSandbox spawned = BwrapSandbox.create(SandboxConfig.defaults().withSlots(8).withZygote(false))) {
            SandboxSpec spec = ZygoteTest.poolSpec();
            byte[] payload = WarmPool.payload("print(1)", List.of(), "");
            Run zygote = () -> forked.launch(spec, false).complete(payload, spec.limits(), OutputListener.NONE);
            Run spawn = () -> spawned.launch(spec, false).complete(payload, spec.limits(), OutputListener.NONE);
            Run bare = () -> new ProcessBuilder("/usr/bin/python3", "-c", "print(1)").start().waitFor();
            if (args.length > 1 && args[1].equals("--zygote-only")) { // for a profiler: nothing but forked runs
                System.out.printf("zygote only, concurrency 4: %.1f runs/s%n", measure(zygote, 4, runs)[0]);
                return;
            }
            for (int concurrency : new int[] {1, 4}) {
                double[][] rates = new double[3][5];
                double[][] p50s = new double[3][5];
                Run[] all = {zygote, spawn, bare};
                for (Run r : all) {
                    measure(r, concurrency, 20); // warm-up
                }
                for (int round = 0; round < 5; round++) {
                    for (int k = 0; k < all.length; k++) {
                        double[] m = measure(all[k], concurrency, runs / 5);
                        rates[k][round] = m[0];
                        p50s[k][round] = m[1];
                    }
                }
                double[] rate = {median(rates[0]), median(rates[1]), median(rates[2])};
                double[] p50 = {median(p50s[0]), median(p50s[1]), median(p50s[2])};
                System.out.printf("concurrency %d: runs/s zygote %.1f, spawn %.1f, bare python3 %.1f; p50 ms zygote %.2f,"
                        + " spawn %.2f, bare %.2f%n", concurrency, rate[0], rate[1], rate[2], p50[0], p50[1], p50[2]);
                System.out.printf("  ratios to bare: throughput zygote %.2fx, spawn %.2fx; p50 zygote %.2fx, spawn %.2fx%n",
                        rate[0] / rate[2], rate[1] / rate[2], p50[0] / p50[2], p50[1] / p50[2]);
            }
        }
    }

    /** {@code n} runs over {@code concurrency} threads: runs per second and the p50 latency in ms. */
    private static double[] measure(Run run, int concurrency, int n) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(concurrency);
        long[] latencies = new long[n];
        long start = System.nanoTime();
        try {
            Future<?>[] futures = new Future<?>[n];
            for (int i = 0; i < n; i++) {
                int at = i;
                futures[i] = pool.submit(() -> {
                    long t = System.nanoTime();
                    run.once();
                    latencies[at] = System.nanoTime() - t;
                    return null;
                });
            }
            for (Future<?> f : futures) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        Arrays.sort(latencies);
        return new double[] {n / seconds, latencies[n / 2] / 1e6};
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
