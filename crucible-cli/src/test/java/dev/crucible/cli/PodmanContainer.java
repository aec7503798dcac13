package dev.crucible.cli;

import static org.awaitility.Awaitility.await;

import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Assumptions;

/**
 * Crucible's OCI image ({@code scripts/build-image.sh}) loaded into Podman and run with exactly the security settings
 * of docs/container.md ("Running in a container"), answered over HTTP on a loopback port of the host. The archive is built
 * once per JAR and build script (cached under the temp directory, keyed by their hash) and loaded once per key.
 */
public final class PodmanContainer implements AutoCloseable {
    static final String TOKEN = "container-it-token";
    static final Path ROOT = Path.of("").toAbsolutePath().getParent(); // failsafe runs in crucible-cli
    private static final String CGROUP_V1 = ROOT.resolve("deploy/podman/cgroup-v1.sh").toString();
    private static final Path CACHE = Path.of(System.getProperty("java.io.tmpdir"), "crucible-container-it");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /**
     * The settings, as docs/container.md writes them (the seccomp profile relative to the repository): a user namespace of
     * 65536 ids (the slot uids 61000-64999 included), the profile, /proc unmasked (bwrap mounts a fresh one), no new
     * privileges, and the capabilities the server uses; then the writable cgroup, which differs by version.
     */
    public static List<String> security(boolean cgroupV2) {
        List<String> flags = new ArrayList<>(List.of("--uidmap", "0:524288:65536", "--gidmap", "0:524288:65536",
                "--security-opt", "seccomp=deploy/podman/crucible-seccomp.json",
                "--security-opt", cgroupV2 ? "unmask=/proc/*:/sys/fs/cgroup" : "unmask=/proc/*",
                "--security-opt", "no-new-privileges",
                "--cap-drop", "all", "--cap-add", "CHOWN,DAC_OVERRIDE,FOWNER,KILL,SETGID,SETPCAP,SETUID"));
        if (cgroupV2) {
            flags.addAll(List.of("--cgroupns", "private")); // not tested on this cgroup v1 machine: see docs/container.md
        }
        return flags;
    }

    final String name;
    final int port;
    private final boolean cgroupV1;

    private PodmanContainer(String name, int port, boolean cgroupV1) {
        this.name = name;
        this.port = port;
        this.cgroupV1 = cgroupV1;
    }

    /** Builds or reuses the image, then starts a container and waits until it serves; aborts with why when it cannot. */
    static PodmanContainer start(Path jar) throws Exception {
        if ("0".equals(System.getenv("CRUCIBLE_CONTAINER_IT"))) {
            Assumptions.abort("skipped: CRUCIBLE_CONTAINER_IT=0 (the run opted out of the container test)");
        }
        Capability.ROOT.require(); // rootful podman; the cgroup delegation
        for (Capability tool : List.of(Capability.PODMAN, Capability.MMDEBSTRAP, Capability.UMOCI, Capability.SKOPEO)) {
            tool.require();
        }
        long t0 = System.nanoTime();
        String image = image(jar);
        long t1 = System.nanoTime();
        boolean v2 = Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers"));
        String name = "crucible-it-" + ProcessHandle.current().pid();
        run(List.of("podman", "rm", "-f", "-v", name));
        List<String> create = new ArrayList<>(List.of("podman", "create", "--name", name));
        create.addAll(hostOnly());
        for (String flag : security(v2)) {
            create.add(flag.replace("seccomp=deploy/", "seccomp=" + ROOT.resolve("deploy") + "/"));
        }
        if (!v2) {
            create.addAll(List.of(ok(List.of(CGROUP_V1, "flags", name)).strip().split(" +")));
        }
        create.addAll(List.of("-e", "CRUCIBLE_TOKENS=" + TOKEN,
                "-e", "SERVER_API_TOKEN=" + System.getenv("SERVER_API_TOKEN"), // the canary: no sandbox may see it
                "-p", "127.0.0.1::8080", image));
        ok(create);
        if (!v2) {
            ok(List.of(CGROUP_V1, "delegate", name));
        }
        ok(List.of("podman", "start", name));
        String published = ok(List.of("podman", "port", name, "8080/tcp")).strip();
        PodmanContainer c = new PodmanContainer(name, Integer.parseInt(published.substring(published.lastIndexOf(':') + 1)), !v2);
        c.awaitServing();
        System.out.printf("ContainerIT: image ready in %d ms, container serving in %d ms (%s)%n",
                (t1 - t0) / 1_000_000, (System.nanoTime() - t1) / 1_000_000, String.join(" ", create));
        return c;
    }

    /**
     * What this machine needs that is no security setting: crun 1.8 refuses a hybrid cgroup host (v1 with controllers
     * on the unified tree), runc does not; without CAP_SYS_RESOURCE podman's default rlimits (nofile and nproc at
     * 1048576) cannot be set, so the host's own are passed (nproc at most 32768, podman's own limit).
     */
    private static List<String> hostOnly() throws IOException {
        List<String> flags = new ArrayList<>();
        Path unified = Path.of("/sys/fs/cgroup/unified/cgroup.controllers");
        if (Files.exists(unified) && !Files.readString(unified).isBlank() && Files.exists(Path.of("/usr/sbin/runc"))) {
            flags.addAll(List.of("--runtime", "runc"));
        }
        String status = Files.readString(Path.of("/proc/self/status"));
        long capEff = Long.parseLong(status.lines().filter(l -> l.startsWith("CapEff:")).findFirst().orElseThrow()
                .substring(7).strip(), 16);
        if ((capEff & (1L << 24)) == 0) {
            long nofile = hardLimit("Max open files");
            long nproc = Math.min(hardLimit("Max processes"), 32768);
            flags.addAll(List.of("--ulimit", "nofile=" + nofile + ":" + nofile, "--ulimit", "nproc=" + nproc + ":" + nproc));
        }
        return flags;
    }

    private static long hardLimit(String name) throws IOException {
        String line = Files.readAllLines(Path.of("/proc/self/limits")).stream().filter(l -> l.startsWith(name))
                .findFirst().orElseThrow();
        return Long.parseLong(line.substring(26).trim().split("\\s+")[1]);
    }

    /** The image for this JAR and build script: loaded already, else loaded from the cached archive, else built. */
    private static String image(Path jar) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        sha.update(Files.readAllBytes(jar));
        sha.update(Files.readAllBytes(ROOT.resolve("scripts/build-image.sh")));
        String key = HexFormat.of().formatHex(sha.digest()).substring(0, 16);
        String tag = "it-" + key;
        String ref = "localhost/crucible:" + tag;
        if (run(List.of("podman", "image", "exists", ref)).exit() == 0) {
            return ref;
        }
        Files.createDirectories(CACHE);
        Path archive = CACHE.resolve("crucible-" + key + ".oci.tar");
        if (!Files.exists(archive)) {
            try (var old = Files.newDirectoryStream(CACHE, "crucible-*.oci.tar")) {
                for (Path p : old) {
                    Files.delete(p);
                }
            }
            Path log = CACHE.resolve("build-image.log");
            ProcessBuilder build = new ProcessBuilder(ROOT.resolve("scripts/build-image.sh").toString(), archive.toString())
                    .redirectErrorStream(true).redirectOutput(log.toFile()).directory(ROOT.toFile());
            build.environment().put("CRUCIBLE_JAR", jar.toAbsolutePath().toString());
            build.environment().put("CRUCIBLE_IMAGE_TAG", tag);
            build.environment().put("JAVA_HOME", System.getProperty("java.home")); // jdeps and jlink of this JDK 25
            Process p = build.start();
            if (!p.waitFor(20, TimeUnit.MINUTES) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException("scripts/build-image.sh failed; see " + log + ":\n" + Files.readString(log));
            }
        }
        for (String old : ok(List.of("podman", "images", "--format", "{{.Repository}}:{{.Tag}}", "localhost/crucible"))
                .lines().filter(l -> l.startsWith("localhost/crucible:it-")).toList()) {
            run(List.of("podman", "rmi", "-f", old)); // an earlier build's: a gigabyte each
        }
        ok(List.of("podman", "load", "-q", "-i", archive.toString()));
        return ref;
    }

    private void awaitServing() throws Exception {
        try {
            await("the container serving").atMost(Duration.ofMinutes(2)).pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(250)).until(() -> {
                        String logs = logs();
                        if (logs.contains("serving on")) {
                            return true;
                        }
                        if (!run(List.of("podman", "inspect", "--format", "{{.State.Running}}", name)).out()
                                .contains("true")) {
                            throw new AssertionError("the container stopped:\n" + logs);
                        }
                        return false;
                    });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("the container did not serve within 2 min:\n" + logs(), e);
        }
    }

    String logs() throws IOException, InterruptedException {
        Result r = run(List.of("podman", "logs", name));
        return r.out() + r.err();
    }

    /** A request with the token; {@code body} null for none, a String for JSON, bytes for an octet stream. */
    HttpResponse<String> send(String method, String path, Object body, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofMinutes(2)).header("Authorization", "Bearer " + TOKEN);
        if (headers.length > 0) {
            b.headers(headers);
        }
        HttpRequest.BodyPublisher publisher = HttpRequest.BodyPublishers.noBody();
        if (body instanceof String json) {
            b.header("Content-Type", "application/json");
            publisher = HttpRequest.BodyPublishers.ofString(json);
        } else if (body instanceof byte[] bytes) {
            b.header("Content-Type", "application/octet-stream");
            publisher = HttpRequest.BodyPublishers.ofByteArray(bytes);
        } else if (!method.equals("GET") && !method.equals("DELETE")) {
            b.header("X-Crucible-Request", "1");
        }
        return HTTP.send(b.method(method, publisher).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@code podman exec -i} of {@code argv} in the container: its stdin, then its stdout. */
    Process exec(String... argv) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("podman", "exec", "-i", name));
        cmd.addAll(List.of(argv));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    }

    @Override
    public void close() throws Exception {
        run(List.of("podman", "rm", "-f", "-v", "-t", "30", name));
        if (cgroupV1) {
            run(List.of(CGROUP_V1, "remove", name));
        }
    }

    /** What a command did: its exit code, stdout and stderr. */
    record Result(int exit, String out, String err) {}

    /** Runs a command to its end (at most 20 minutes: a cold image build). */
    static Result run(List<String> argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).directory(ROOT.toFile()).start();
        var err = new CompletableFuture<String>();
        Thread.ofVirtual().start(() -> {
            try (InputStream in = p.getErrorStream()) {
                err.complete(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                err.complete(e.toString());
            }
        });
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(20, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new IOException("timed out: " + argv);
        }
        return new Result(p.exitValue(), out, err.join());
    }

    /** Runs a command that must succeed; its stdout. */
    static String ok(List<String> argv) throws IOException, InterruptedException {
        Result r = run(argv);
        if (r.exit() != 0) {
            throw new IOException(String.join(" ", argv) + " failed (" + r.exit() + "):\n" + r.out() + r.err());
        }
        return r.out();
    }
}
