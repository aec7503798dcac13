package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestDirs;
import dev.crucible.image.registry.TestRegistry;
import dev.crucible.image.store.TestImages;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code crucible image} as an operator runs it, against Debian's docker-registry on loopback with a real Debian image
 * (mmdebstrap's root with Python, pushed by skopeo): a pull killed with SIGKILL in the middle leaves no image and
 * resumes without fetching what it had verified; then runs, runtimes and a server use the image.
 */
class ImageIT {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static Path work;
    static TestRegistry registry;
    static String digest;
    static long compressedBytes;

    @BeforeAll
    static void pushTheDebianImage() throws Exception {
        TestRegistry.requireInstalled();
        work = TestDirs.create("crucible-image-it"); // deleted at exit
        registry = TestRegistry.start(work.resolve("registry"));
        Path layout = work.resolve("layout");
        exec("umoci", "init", "--layout", layout.toString());
        exec("umoci", "new", "--image", layout + ":1");
        exec("umoci", "raw", "add-layer", "--image", layout + ":1", TestImages.debianRoot().toString());
        digest = registry.pushLayout(layout, "1", "crucible/debian-python");
        try (Stream<Path> blobs = Files.walk(registry.storage())) {
            compressedBytes = blobs.filter(p -> p.getFileName().toString().equals("data"))
                    .mapToLong(p -> p.toFile().length()).sum();
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (registry != null) {
            registry.close();
        }
    }

    static void exec(String... argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(String.join(" ", argv) + "\n" + out).isZero();
    }

    static ProcessBuilder crucible(Path data, String... args) {
        List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-jar", CliIT.JAR.toAbsolutePath().toString()));
        argv.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(argv);
        pb.environment().put("CRUCIBLE_DATA_DIR", data.toString());
        return pb;
    }

    static CliIT.Outcome run(Path data, String stdin, String... args) throws Exception {
        Process p = crucible(data, args).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).isTrue();
        return new CliIT.Outcome(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
    }

    static Path dataDir(String name) throws IOException {
        Path dir = Files.createDirectory(work.resolve(name));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        return dir;
    }

    static long partialBytes(Path data) throws IOException {
        Path partial = data.resolve("images/partial");
        if (!Files.isDirectory(partial)) {
            return 0;
        }
        try (Stream<Path> files = Files.list(partial)) {
            return files.mapToLong(p -> p.toFile().length()).sum();
        }
    }

    @Test
    void aPullKilledMidwayLeavesNoImageAndResumesThenRunsInTheImage() throws Exception {
        Path data = dataDir("resume");
        try (SlowRelay relay = SlowRelay.to(registry.port(), 16L << 20)) {
            String ref = "127.0.0.1:" + relay.port() + "/crucible/debian-python:1";
            Process first = crucible(data, "image", "pull", ref).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            await("4 MiB of the pull on disk, or its end").atMost(Duration.ofMinutes(5))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> partialBytes(data) >= (4L << 20) || !first.isAlive());
            assertThat(first.isAlive()).as("the pull was still downloading when killed").isTrue();
            first.destroyForcibly(); // SIGKILL
            first.waitFor();
            long kept = partialBytes(data);
            assertThat(kept).isGreaterThanOrEqualTo(4L << 20);

            CliIT.Outcome ls = run(data, "", "image", "ls", "--json");
            assertThat(ls.exit()).as(ls.stderr()).isZero();
            assertThat(JSON.readTree(ls.stdout()).size()).as("no half image is visible").isZero();

            long servedBefore = relay.bytes();
            CliIT.Outcome second = run(data, "", "image", "pull", ref);
            assertThat(second.exit()).as(second.stderr()).isZero();
            assertThat(second.stdout()).contains(digest);
            long fetched = relay.bytes() - servedBefore;
            assertThat(fetched).as("the second pull fetched only what the first had not (kept %d of %d)", kept,
                    compressedBytes).isLessThan(compressedBytes - kept + (1L << 20));

            CliIT.Outcome inImage = run(data, "import tabulate, sys\nprint(tabulate.__name__, sys.version_info[:2])",
                    "run", "--image", ref, "-l", "python", "-");
            assertThat(inImage.exit()).as(inImage.stderr()).isZero();
            assertThat(inImage.stdout()).isEqualTo("tabulate (3, 11)\n");

            Path toml = data.resolve("runtimes.toml");
            Files.writeString(toml, "[[runtime]]\nlanguage = \"py-debian\"\nfile_name = \"main.py\"\n"
                    + "run_command = [\"python3\", \"{file}\"]\nimage = \"" + ref + "\"\n\n[[runtime]]\n"
                    + "language = \"py-absent\"\nfile_name = \"main.py\"\nrun_command = [\"python3\", \"{file}\"]\n"
                    + "image = \"127.0.0.1:" + relay.port() + "/crucible/absent:1\"\n");
            CliIT.Outcome runtimes = run(data, "", "runtimes", "--runtimes", toml.toString());
            assertThat(runtimes.stdout()).containsPattern("py-debian .*available  isolation: namespaces, spawn  \\(image " + ref.replace(".", "\\.")
                    + " " + digest + "\\)");
            assertThat(runtimes.stdout()).contains("py-absent").contains("run: crucible image pull 127.0.0.1:"
                    + relay.port() + "/crucible/absent:1");
        }
    }

    @Test
    void imageFailuresAreOneLineWithTheirOwnExitCodes() throws Exception {
        Path data = dataDir("errors");
        CliIT.Outcome missing = run(data, "", "image", "pull", registry.host() + "/crucible/nothing:1");
        CliIT.assertOneLineError(missing, "nothing");
        assertThat(missing.exit()).isEqualTo(68);
        CliIT.Outcome unreachable = run(data, "", "image", "pull", "127.0.0.1:1/crucible/x:1");
        CliIT.assertOneLineError(unreachable, "127.0.0.1:1");
        assertThat(unreachable.exit()).isEqualTo(75);
        CliIT.Outcome invalid = run(data, "", "image", "pull", "Not/A:Reference:");
        CliIT.assertOneLineError(invalid, "invalid image reference");
        assertThat(invalid.exit()).isEqualTo(65);
        CliIT.Outcome notPulled = run(data, "print(1)", "run", "--image", "crucible.test/absent:1", "-l", "python", "-");
        CliIT.assertOneLineError(notPulled, "crucible image pull crucible.test/absent:1");
        assertThat(notPulled.exit()).isEqualTo(68);
        try (TestRegistry locked = TestRegistry.startWithTokenAuth(work.resolve("token-registry"), "alice", "secret")) {
            CliIT.Outcome denied = run(data, "", "image", "pull", locked.host() + "/crucible/debian-python:1");
            CliIT.assertOneLineError(denied, locked.host());
            assertThat(denied.exit()).isEqualTo(77);
        }
        assertThat(JSON.readTree(run(data, "", "image", "ls", "--json").stdout()).size())
                .as("no failure left an image behind").isZero();
    }

    @Test
    void aCommittedSessionIsPushedToTheRegistryAndAnotherDataDirectoryPullsAndRunsIt() throws Exception {
        Path data = dataDir("commit");
        String base = registry.host() + "/crucible/debian-python:1";
        assertThat(run(data, "", "image", "pull", "-q", base).exit()).isZero();
        ServeIT.Served s = ServeIT.serve(data, "--pool", "python=0");
        try {
            String id = JSON.readTree(ServeIT.post(s.port(), "/v1/sessions", JSON.writeValueAsString(Map.of(
                    "language", "python", "image", base))).body()).get("id").asString();
            String cell = ServeIT.post(s.port(), "/v1/sessions/" + id + "/execute", "{\"code\": \"open('/workspace/"
                    + "made.py', 'w').write('WHO = \\\"the committed session\\\"')\"}").body();
            assertThat(cell).contains("\"status\":\"ok\"");
            var committed = ServeIT.post(s.port(), "/v1/sessions/" + id + "/commit", "{\"tag\": \"team/made:1\"}");
            assertThat(committed.statusCode()).as(committed.body()).isEqualTo(201);
        } finally {
            s.stop(Duration.ofSeconds(30));
        }
        CliIT.Outcome pushed = run(data, "", "image", "push", "team/made:1", registry.host() + "/team/made:1");
        assertThat(pushed.exit()).as(pushed.stderr()).isZero();
        assertThat(pushed.stderr()).contains("already there"); // the base image's layers were in the registry
        String digest = pushed.stdout().strip().replaceAll(".*@", "");

        Path other = dataDir("commit-other");
        CliIT.Outcome pulled = run(other, "", "image", "pull", "-q", registry.host() + "/team/made:1");
        assertThat(pulled.exit()).as(pulled.stderr()).isZero();
        assertThat(pulled.stdout().strip()).as("the other replica pulls what one committed").isEqualTo(digest);
        ServeIT.Served t = ServeIT.serve(other, "--pool", "python=0");
        try {
            String id = JSON.readTree(ServeIT.post(t.port(), "/v1/sessions", JSON.writeValueAsString(Map.of(
                    "language", "python", "image", registry.host() + "/team/made:1"))).body()).get("id").asString();
            String cell = ServeIT.post(t.port(), "/v1/sessions/" + id + "/execute", "{\"code\": \"import sys;"
                    + " sys.path.insert(0, '/workspace'); import made; made.WHO\"}").body();
            assertThat(cell).contains("\"result\":\"'the committed session'\"");
        } finally {
            t.stop(Duration.ofSeconds(30));
        }
    }

    @Test
    void aServerPullsOnlyFromTheRegistriesItIsAllowed() throws Exception {
        Path data = dataDir("serve");
        ServeIT.Served s = ServeIT.serve(data, "--allow-pull", registry.host(), "--pool", "python=0");
        try {
            String ref = registry.host() + "/crucible/debian-python:1";
            String request = JSON.writeValueAsString(Map.of("language", "python", "image", ref,
                    "code", "import tabulate; print('pulled and ran')"));
            // a pull longer than the request's timeout goes on: the request is told to ask again (a busy machine's);
            // 60 asks again, each answered within its timeout plus the grace
            var r = await("the pull done: an answer other than 503").atMost(Duration.ofMinutes(12))
                    .pollDelay(Duration.ZERO).pollInterval(Duration.ofSeconds(1))
                    .until(() -> ServeIT.post(s.port(), request), answer -> {
                        if (answer.statusCode() != 503) {
                            return true;
                        }
                        assertThat(answer.body()).contains("image_pulling");
                        assertThat(answer.headers().firstValue("Retry-After")).isPresent();
                        return false;
                    });
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode body = JSON.readTree(r.body());
            assertThat(body.get("stdout").asString()).isEqualTo("pulled and ran\n");
            assertThat(body.get("image_digest").asString()).isEqualTo(digest);
            var refused = ServeIT.post(s.port(), JSON.writeValueAsString(Map.of("language", "python",
                    "image", "127.0.0.1:1/crucible/elsewhere:1", "code", "print(1)")));
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(422);
            assertThat(refused.body()).contains("image_not_found").contains("--allow-pull 127.0.0.1:1");
        } finally {
            s.stop(Duration.ofSeconds(30));
        }
    }

    /** A TCP relay to the registry that sends at most {@code bytesPerSecond} back and counts what it sent. */
    static final class SlowRelay implements AutoCloseable {
        private final ServerSocket socket;
        private final AtomicLong sent = new AtomicLong();

        private SlowRelay(ServerSocket socket) {
            this.socket = socket;
        }

        static SlowRelay to(int upstreamPort, long bytesPerSecond) throws IOException {
            SlowRelay relay = new SlowRelay(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
            Thread.ofPlatform().daemon().start(() -> {
                while (!relay.socket.isClosed()) {
                    try {
                        Socket client = relay.socket.accept();
                        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
                        Thread.ofPlatform().daemon().start(() -> pump(client, upstream, Long.MAX_VALUE, null));
                        Thread.ofPlatform().daemon().start(() -> pump(upstream, client, bytesPerSecond, relay.sent));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
            return relay;
        }

        private static void pump(Socket from, Socket to, long rate, AtomicLong counter) {
            byte[] buffer = new byte[64 * 1024];
            long start = System.nanoTime();
            long total = 0;
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) > 0) {
                    out.write(buffer, 0, n);
                    total += n;
                    if (counter != null) {
                        counter.addAndGet(n);
                    }
                    long due = start + total * 1_000_000_000L / rate;
                    long wait = due - System.nanoTime();
                    if (rate != Long.MAX_VALUE && wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                }
            } catch (IOException | InterruptedException e) {
                // either side closed
            } finally {
                try {
                    from.close();
                    to.close();
                } catch (IOException e) {
                    // closing
                }
            }
        }

        int port() {
            return socket.getLocalPort();
        }

        long bytes() {
            return sent.get();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
