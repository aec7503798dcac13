package dev.crucible.egress.proxy;

import com.sun.management.OperatingSystemMXBean;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.os.Splice;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Prints what the egress proxy costs (a benchmark: run on purpose, never by the test suite; {@code
 * scripts/bench-egress.sh} runs it both ways): curl downloading {@code MB} megabytes from a loopback origin directly
 * and through the proxy (CONNECT tunnel and forward GET), the three in turn each round, medians; and the time of a
 * small first request each way. The origin is Python's {@code http.server} in a process of its own (it sends a file
 * with {@code sendfile}), so the proxy's JVM does nothing but relay. The relay splices when this JVM was started with
 * {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}, and copies through its own buffers otherwise; the first line
 * says which. For scale, HAProxy (when installed) relays the same download as a plain TCP relay. Usage: {@code java -cp classes:test-classes dev.crucible.egress.proxy.EgressBench [MB] [ROUNDS]}.
 */
final class EgressBench {
    private EgressBench() {}

    public static void main(String[] args) throws Exception {
        int megabytes = args.length > 0 ? Integer.parseInt(args[0]) : 50;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 9;
        Path files = Files.createTempDirectory("crucible-egress-bench");
        try (OutputStream out = Files.newOutputStream(files.resolve("big"))) {
            byte[] block = new byte[1 << 20];
            for (int i = 0; i < megabytes; i++) {
                out.write(block);
            }
        }
        Files.write(files.resolve("small"), new byte[16]);
        int port = freePort();
        Process origin = new ProcessBuilder("/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1",
                Integer.toString(port)).directory(files.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        int relayPort = freePort();
        Process haproxy = haproxy(files, port, relayPort);
        EgressLimits limits = EgressLimits.defaults().withMaxBytes(Long.MAX_VALUE);
        try (EgressProxy proxy = EgressProxy.create(EgressPolicy.parse("127.0.0.1:" + port), EgressResolver.system(),
                limits, InstantSource.system())) {
            awaitListening(port);
            if (haproxy != null) {
                awaitListening(relayPort);
            }
            String via = "http://127.0.0.1:" + proxy.listenLoopback().getPort();
            String url = "http://127.0.0.1:" + port;
            List<String> direct = List.of("--noproxy", "*");
            List<String> tunnel = List.of("--proxy", via, "--proxytunnel");
            List<String> forward = List.of("--proxy", via);
            System.out.println("relay: " + (Splice.available() ? "splice (through a pipe in the kernel)"
                    : "copy (through the JVM's buffers)"));
            double[][] speeds = new double[4][rounds];
            long[][] cpu = new long[3][3]; // per way: the proxy's JVM, curl, the origin
            long originPid = origin.pid();
            for (int i = 0; i < rounds; i++) {
                if (haproxy != null) {
                    speeds[3][i] = curl("http://127.0.0.1:" + relayPort + "/big", direct, "%{speed_download}");
                }
                for (int way = 0; way < 3; way++) {
                    long[] before = {cpuNanos(), childrenCpuNanos(), processCpuNanos(originPid)};
                    speeds[way][i] = curl(url + "/big", List.of(direct, tunnel, forward).get(way), "%{speed_download}");
                    long[] after = {cpuNanos(), childrenCpuNanos(), processCpuNanos(originPid)};
                    for (int who = 0; who < 3; who++) {
                        cpu[way][who] += after[who] - before[who];
                    }
                }
            }
            double base = median(speeds[0]);
            double tunnelled = median(speeds[1]);
            double forwarded = median(speeds[2]);
            System.out.printf("download %d MB, median of %d: direct %.0f MB/s, CONNECT %.0f MB/s (%.2f),"
                    + " forward %.0f MB/s (%.2f)%n", megabytes, rounds, base / 1e6, tunnelled / 1e6,
                    tunnelled / base, forwarded / 1e6, forwarded / base);
            if (haproxy != null) {
                double relayed = median(speeds[3]);
                System.out.printf("for scale, HAProxy %s as a plain TCP relay (splice-auto; no CONNECT, no policy):"
                        + " %.0f MB/s (%.2f)%n", "in the same run", relayed / 1e6, relayed / base);
            }
            double gigabytes = (double) megabytes * rounds / 1024;
            String[] ways = {"direct", "CONNECT", "forward"};
            for (int way = 0; way < 3; way++) {
                System.out.printf("CPU per GB, %s: the proxy's JVM %.0f ms, curl %.0f ms, the origin %.0f ms%n",
                        ways[way], cpu[way][0] / 1e6 / gigabytes, cpu[way][1] / 1e6 / gigabytes,
                        cpu[way][2] / 1e6 / gigabytes);
            }
            double[][] times = new double[2][rounds];
            for (int i = 0; i < rounds; i++) {
                times[0][i] = curl(url + "/small", direct, "%{time_total}");
                times[1][i] = curl(url + "/small", tunnel, "%{time_total}");
            }
            double first = median(times[0]);
            double firstTunnel = median(times[1]);
            System.out.printf("small request, median of %d: direct %.2f ms, CONNECT %.2f ms (+%.2f ms)%n", rounds,
                    first * 1e3, firstTunnel * 1e3, (firstTunnel - first) * 1e3);
        } finally {
            if (haproxy != null) {
                haproxy.destroy();
                haproxy.waitFor();
                Files.delete(files.resolve("haproxy.cfg"));
            }
            origin.destroy();
            origin.waitFor();
            Files.delete(files.resolve("big"));
            Files.delete(files.resolve("small"));
            Files.delete(files);
        }
    }

    /** HAProxy relaying TCP from {@code listen} to the origin, when it is installed; otherwise null. */
    private static Process haproxy(Path files, int origin, int listen) throws IOException {
        if (!Files.isExecutable(Path.of("/usr/sbin/haproxy"))) {
            System.out.println("(no /usr/sbin/haproxy: the HAProxy row is left out; apt-get install haproxy)");
            return null;
        }
        Path config = files.resolve("haproxy.cfg");
        Files.writeString(config, String.join("\n", "global", "  maxconn 64", "defaults", "  mode tcp",
                "  timeout connect 5s", "  timeout client 60s", "  timeout server 60s", "  option splice-auto",
                "listen relay", "  bind 127.0.0.1:" + listen, "  server origin 127.0.0.1:" + origin, ""));
        return new ProcessBuilder("/usr/sbin/haproxy", "-db", "-f", config.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    /** CPU time this JVM (the proxy) has used, user and system. */
    private static long cpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** CPU time of this JVM's children that ended (curl, reaped by the JDK), by {@code getrusage(RUSAGE_CHILDREN)}. */
    private static long childrenCpuNanos() {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MethodHandle getrusage = linker.downcallHandle(
                    linker.defaultLookup().find("getrusage").orElseThrow(), FunctionDescriptor.of(
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                            ValueLayout.ADDRESS));
            MemorySegment usage = arena.allocate(144, 8); // struct rusage: two timevals first
            int ignored = (int) getrusage.invokeExact(-1, usage); // RUSAGE_CHILDREN
            long nanos = 0;
            for (int timeval = 0; timeval < 2; timeval++) {
                nanos += usage.get(ValueLayout.JAVA_LONG, timeval * 16L) * 1_000_000_000L
                        + usage.get(ValueLayout.JAVA_LONG, timeval * 16L + 8) * 1_000L;
            }
            return nanos;
        } catch (Throwable t) {
            throw new IllegalStateException("getrusage", t);
        }
    }

    /** CPU time of process {@code pid}, user and system, from /proc (in clock ticks of 10 ms). */
    private static long processCpuNanos(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * 10_000_000L;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void awaitListening(int port) throws InterruptedException {
        for (int i = 0; i < 500; i++) {
            try (Socket ignored = new Socket()) {
                ignored.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                return;
            } catch (IOException e) {
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("the origin (python3 -m http.server) did not start on port " + port);
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    /** curl's {@code format} value for one request. */
    private static double curl(String url, List<String> options, String format) throws Exception {
        List<String> command = new ArrayList<>(List.of("curl", "-sS", "-o", "/dev/null", "-w", format));
        command.addAll(options);
        command.add(url);
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(process.getInputStream().readAllBytes()).trim();
        if (process.waitFor() != 0) {
            throw new IllegalStateException("curl failed: " + command);
        }
        return Double.parseDouble(out);
    }
}
