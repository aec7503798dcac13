package dev.crucible.egress;

import dev.crucible.Crucible;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.proxy.EgressLimits;
import dev.crucible.egress.proxy.EgressResolver;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.testhost.NetnsHost;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.List;

/**
 * Prints what egress costs a run (a benchmark: run on purpose, never by the test suite): the wall time of a cold
 * {@code print(1)} with and without {@code network} (the namespace, the listener and the proxy made for it), and of
 * a first request from inside the sandbox to a real index through the proxy, against the same request from the host
 * (the index runs on a {@link NetnsHost}).
 * Needs root. Usage: {@code java -cp classes:test-classes:DEPS dev.crucible.egress.EgressLaunchBench [ROUNDS]}.
 */
final class EgressLaunchBench {
    private EgressLaunchBench() {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        try (Crucible engine = Crucible.start(SandboxConfig.defaults().withSlots(2), null);
                NetnsHost testHost = NetnsHost.open();
                PackageIndex index = PackageIndex.start(testHost)) {
            engine.executor().useEgress(Egress.of(EgressPolicy.parse(index.allowEntry()), EgressResolver.system(),
                    EgressLimits.defaults(), InstantSource.system()));
            NetworkRequest network = NetworkRequest.allow(List.of(index.allowEntry()));
            ExecuteRequest plain = ExecuteRequest.of("python", "print(1)");
            ExecuteRequest withNetwork = plain.withNetwork(network);
            String fetch = "import time, urllib.request\nt = time.perf_counter()\n"
                    + "urllib.request.urlopen('" + index.pypiUrl() + "crucible-demo-b/').read()\n"
                    + "print(round((time.perf_counter() - t) * 1000, 3))";
            for (int i = 0; i < 5; i++) { // warm-up
                engine.executor().execute(plain);
                engine.executor().execute(withNetwork);
            }
            long[] without = new long[rounds];
            long[] with = new long[rounds];
            double[] inside = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                without[i] = timed(engine, plain);
                with[i] = timed(engine, withNetwork);
                ExecuteResult r = engine.executor().execute(ExecuteRequest.of("python", fetch).withNetwork(network));
                inside[i] = Double.parseDouble(r.stdout().strip());
            }
            double[] host = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                Process p = new ProcessBuilder("/usr/bin/python3", "-c", fetch).start();
                host[i] = Double.parseDouble(new String(p.getInputStream().readAllBytes()).strip());
                p.waitFor();
            }
            double a = median(without) / 1e6;
            double b = median(with) / 1e6;
            System.out.printf("cold print(1), p50 of %d: without network %.2f ms, with network %.2f ms (%.2fx)%n",
                    rounds, a, b, b / a);
            System.out.printf("first request to the index, p50: from the host %.3f ms, from a sandbox through the"
                    + " proxy %.3f ms (+%.3f ms)%n", median(host), median(inside), median(inside) - median(host));
        }
    }

    private static long timed(Crucible engine, ExecuteRequest request) throws InterruptedException {
        long t = System.nanoTime();
        ExecuteResult r = engine.executor().execute(request);
        long elapsed = System.nanoTime() - t;
        if (!r.ok()) {
            throw new IllegalStateException(r.status() + " " + r.stderr() + r.message());
        }
        return elapsed;
    }

    private static double median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
