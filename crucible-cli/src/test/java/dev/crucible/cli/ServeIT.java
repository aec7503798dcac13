package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestDirs;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import dev.crucible.sandbox.uid.UidLayout;
import dev.crucible.sandbox.uid.UidLease;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code crucible serve} as a newcomer starts it: the JAR in its own JVM, answered over HTTP, stopped by signals. */
class ServeIT {
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    record Served(Process process, int port, List<String> stderr, Thread stderrReader) {
        /**
         * SIGTERM (the graceful drain), then SIGKILL if it has not exited within {@code grace}: a server that outlives
         * its test keeps its uid block and CPU, and every later test on the host pays for it.
         *
         * Returns once its stderr has been read to the end, so a caller's look at {@link #stderr} sees the whole log.
         *
         * @return whether it exited on its own
         */
        boolean stop(Duration grace) throws InterruptedException {
            process.toHandle().destroy(); // not Process.destroy(): that would also close our end of its stderr
            boolean exited = process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS);
            if (!exited) {
                process.destroyForcibly().waitFor();
            }
            stderrReader.join(Duration.ofSeconds(30));
            return exited;
        }
    }

    static Served serve(Path dataDir, String... extra) throws Exception {
        return serveOn(0, dataDir, extra);
    }

    /** As {@link #serve}, on {@code port} (0: a free one). */
    static Served serveOn(int port, Path dataDir, String... extra) throws Exception {
        List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-jar", CliIT.JAR.toAbsolutePath().toString(), "serve", "--port",
                Integer.toString(port), "--data-dir", dataDir.toString()));
        argv.addAll(List.of(extra));
        Process p = new ProcessBuilder(argv).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        Pattern serving = Pattern.compile("serving on http://127\\.0\\.0\\.1:(\\d+) \\(started in \\d+ ms");
        String line;
        List<String> before = new ArrayList<>();
        while ((line = err.readLine()) != null) {
            before.add(line);
            Matcher m = serving.matcher(line);
            if (m.find()) {
                List<String> rest = Collections.synchronizedList(new ArrayList<>());
                // a platform thread: a virtual one blocked on a pipe holds its carrier (three replicas took both)
                Thread reader = Thread.ofPlatform().daemon().start(() -> err.lines().forEach(rest::add));
                return new Served(p, Integer.parseInt(m.group(1)), rest, reader);
            }
        }
        throw new AssertionError("the server did not start; exit " + p.waitFor() + ": " + String.join("\n", before));
    }

    static HttpResponse<String> post(int port, String body) throws Exception {
        return post(port, "/v1/execute", body);
    }

    static HttpResponse<String> post(int port, String path, String body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> get(int port, String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void serveAnswersTheReadmesCurlAndStopsGracefullyOnSigterm(@TempDir Path data) throws Exception {
        Served s = serve(data);
        assertThat(get(s.port(), "/healthz").body()).contains("\"status\":\"ok\"");
        HttpResponse<String> r = post(s.port(), "{\"language\": \"python\", \"code\": \"print(6 * 7)\"}");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"status\":\"ok\"").contains("\"stdout\":\"42\\n\"");
        assertThat(s.stop(Duration.ofSeconds(30))).as("drained and exited on SIGTERM").isTrue();
        assertThat(s.process().exitValue()).isZero();
        assertThat(s.stderrReader().join(Duration.ofSeconds(30))).as("the server's stderr read to its end").isTrue();
        assertThat(List.copyOf(s.stderr())).anyMatch(l -> l.contains("shutting down"));
        assertThat(slotProcesses()).isZero();
    }

    /** {@code crucible bench --url} drives a running server over its own keep-alive connections and counts verdicts. */
    @Test
    void benchDrivesARunningServerAndCountsItsVerdicts(@TempDir Path data, @TempDir Path dir) throws Exception {
        Served s = serve(data);
        try {
            CliIT.Outcome bench = CliIT.crucible(dir, "bench", "--url", "http://127.0.0.1:" + s.port(), "-n", "24",
                    "--rounds", "2", "--warmup", "3", "-c", "3", "--code", "print(6 * 7)");
            assertThat(bench.exit()).as(bench.stderr()).isZero();
            assertThat(bench.stdout()).contains("verdicts: {ok=24}; 5xx: 0").contains("throughput ratio server/bare: ");
        } finally {
            s.stop(Duration.ofSeconds(30));
        }
    }

    static HttpResponse<String> send(int port, String method, String path, String json) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        if (json != null) {
            b.header("Content-Type", "application/json");
        }
        return HTTP.send(b.method(method, json == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void sessionsSurviveKillDashNineWithTheirFilesAndReplay(@TempDir Path data) throws Exception {
        Served first = serve(data, "--pool", "python=0,javascript=0");
        String plain = field(send(first.port(), "POST", "/v1/sessions", "{}").body(), "id");
        String replay = field(send(first.port(), "POST", "/v1/sessions", "{\"restore\": \"replay\"}").body(), "id");
        for (String id : List.of(plain, replay)) {
            assertThat(send(first.port(), "POST", "/v1/sessions/" + id + "/execute",
                    "{\"code\": \"x = 6 * 7\\nopen('made.txt', 'w').write(str(x))\"}").statusCode()).isEqualTo(200);
            HttpResponse<String> put = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + first.port()
                    + "/v1/sessions/" + id + "/files/up/loaded.bin")).PUT(HttpRequest.BodyPublishers.ofByteArray(
                    new byte[] {0, 1, 2, (byte) 255})).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(put.statusCode()).isEqualTo(201);
        }
        first.process().destroyForcibly(); // kill -9: no shutdown of any kind
        assertThat(first.process().waitFor(30, TimeUnit.SECONDS)).isTrue();

        Served second = serve(data, "--pool", "python=0,javascript=0");
        try {
            String listing = send(second.port(), "GET", "/v1/sessions/" + plain + "/files", null).body();
            assertThat(listing).contains("\"path\":\"made.txt\"").contains("\"path\":\"up\"");
            HttpResponse<byte[]> bin = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + second.port()
                    + "/v1/sessions/" + plain + "/files/up/loaded.bin")).build(), HttpResponse.BodyHandlers.ofByteArray());
            assertThat(bin.body()).containsExactly(0, 1, 2, 255);
            String resumed = send(second.port(), "POST", "/v1/sessions/" + plain + "/execute",
                    "{\"code\": \"open('made.txt').read()\"}").body();
            assertThat(resumed).contains("\"resumed\":true").contains("\"result\":\"'42'\"");
            String replayed = send(second.port(), "POST", "/v1/sessions/" + replay + "/execute",
                    "{\"code\": \"x\"}").body();
            assertThat(replayed).contains("\"resumed\":true").contains("\"replayed\":1").contains("\"result\":\"42\"");
            assertThat(send(second.port(), "DELETE", "/v1/sessions/" + plain, null).statusCode()).isEqualTo(200);
            assertThat(send(second.port(), "DELETE", "/v1/sessions/" + replay, null).statusCode()).isEqualTo(200);
        } finally {
            second.stop(Duration.ofSeconds(30));
        }
        assertThat(slotProcesses()).isZero();
    }

    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]+)\"").matcher(json);
        assertThat(m.find()).as(json).isTrue();
        return m.group(1);
    }

    /**
     * The README's "pull, then name the image" on a fresh install: the image store appears in the data dir only after
     * the server started, and the server's next request finds the image, without a restart.
     */
    @Test
    void anImageStoredAfterTheServerStartedIsServedWithoutARestart() throws Exception {
        Path data = TestDirs.create("crucible-serve-images-");
        Served server = serve(data, "--pool", "python=0,javascript=0");
        try {
            assertThat(data.resolve("images")).as("a fresh data dir has no image store yet").doesNotExist();
            TestImages.debianPython(
                    ImageStore.open(data.resolve("images"))); // as crucible image import does
            HttpResponse<String> r = post(server.port(), "{\"language\": \"python\", \"image\": \""
                    + TestImages.DEBIAN_PYTHON
                    + "\", \"code\": \"import tabulate; print('in the image')\"}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(field(r.body(), "stdout")).isEqualTo("in the image\\n");
        } finally {
            server.stop(Duration.ofSeconds(30));
        }
    }

    @Test
    void refusesToServeBeyondLoopbackWithoutAToken(@TempDir Path data) throws Exception {
        CliIT.Outcome o = CliIT.crucible(data, "serve", "--host", "0.0.0.0", "--port", "0");
        assertThat(o.exit()).isEqualTo(ExitCodes.USAGE);
        assertThat(o.stderr()).contains("refusing to listen on 0.0.0.0 without a token");
    }

    /** A crashed server takes its sandboxes with it: the launcher asks for SIGKILL when the server dies. */
    @Test
    void killMinusNineOfTheServerLeavesNoSandboxBehind(@TempDir Path data) throws Exception {
        // no pool: a pool refill caught by the kill inside bubblewrap's own set-up leaves bubblewrap's init waiting for
        // its dead parent until the next start sweeps it (StaleGroupsTest); this test is about the running sandbox.
        // No spare session either: a kill -9 leaves a session's workspace mounted for the next start (ReplicasIT)
        Served s = serve(data, "--pool", "python=0,javascript=0", "--session-spares", "0");
        Thread request = Thread.ofVirtual().start(() -> {
            try {
                post(s.port(), "{\"language\":\"python\",\"code\":\"import time\\ntime.sleep(60)\",\"limits\":{\"timeout_ms\":90000}}");
            } catch (Exception e) {
                // the server is killed under it
            }
        });
        // the first sandbox of a server without a pool: allow for a loaded host
        await("the request's sandbox running").atMost(Duration.ofMinutes(1)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(50))
                .until(() -> slotProcesses() > 0 && get(s.port(), "/healthz").body().contains("\"running\":1"));
        assertThat(slotProcesses()).isPositive();
        s.process().destroyForcibly(); // kill -9
        s.process().waitFor();
        await("the killed server's sandboxes gone").atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(50)).untilAsserted(() -> assertThat(slotProcesses())
                        .as("sandbox processes left after the server was killed").isZero());
        request.join();
    }

    /** Live (not zombie) processes of sandbox uids, in any block a Crucible process may lease ({@code UidLease}). */
    static long slotProcesses() throws Exception {
        long n = 0;
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    List<String> status = Files.readAllLines(p.resolve("status"));
                    boolean zombie = status.stream().anyMatch(l -> l.startsWith("State:") && l.contains("Z"));
                    int uid = status.stream().filter(l -> l.startsWith("Uid:")).map(l -> Integer.parseInt(l.split("\\s+")[1]))
                            .findFirst().orElse(0);
                    if (!zombie && uid >= 61000 && uid < 61000 + UidLease.BLOCKS * UidLayout.SIZE) { // every block a lease may take
                        n++;
                    }
                } catch (Exception e) {
                    // gone
                }
            }
        }
        return n;
    }
}
