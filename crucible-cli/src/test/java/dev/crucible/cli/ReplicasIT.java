package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Sessions across replicas, with real parts: three {@code crucible serve} processes on loopback (each its own uid
 * block), behind a real HAProxy (round robin, its default health check on {@code /readyz}) started by the test. A session made
 * through the balancer keeps its variables and files whichever replica a call lands on; when its replica is
 * {@code kill -9}ed, another takes it over from the shared data directory and resumes it (root's own files in a
 * session with a root of its own still root's, on the new replica's uid block); without a shared one the session is
 * reported lost (410).
 */
class ReplicasIT {
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    static final JsonMapper JSON = JsonMapper.builder().build();
    private final List<Process> processes = new ArrayList<>();
    private final List<Balancer> closing = new ArrayList<>();

    @TempDir
    Path dir;

    @AfterEach
    void stop() throws Exception {
        for (Balancer b : closing) {
            b.close();
        }
        for (Process p : processes) {
            p.destroy(); // SIGTERM: a graceful stop, sessions detached
        }
        for (Process p : processes) {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor();
            }
        }
        // a kill -9ed replica leaves its sessions' workspaces mounted (the next start on that directory reuses them)
        for (String line : Files.readAllLines(Path.of("/proc/self/mounts"))) {
            String mountPoint = line.split(" ")[1];
            if (mountPoint.startsWith(dir.toString() + "/")) {
                new ProcessBuilder("umount", "-l", mountPoint).inheritIO().start().waitFor();
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static Path dataDir(Path dir) throws IOException {
        Files.setPosixFilePermissions(dir.getParent(), PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        return dir;
    }

    /** Starts replica {@code name} on {@code port}; peers are every port given. */
    private ServeIT.Served replica(String name, int port, Path data, int... ports) throws Exception {
        List<String> peers = new ArrayList<>();
        for (int p : ports) {
            peers.add("http://127.0.0.1:" + p);
        }
        ServeIT.Served served = ServeIT.serveOn(port, data, "--replica", name, "--peers",
                String.join(",", peers), "--pool", "python=0,javascript=0");
        processes.add(served.process());
        return served;
    }

    static HttpResponse<String> get(int port, String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> post(int port, String path, String json) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode cell(int port, String id, String code) throws Exception {
        HttpResponse<String> r = post(port, "/v1/sessions/" + id + "/execute",
                JSON.writeValueAsString(Map.of("code", code)));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode cell = JSON.readTree(r.body());
        assertThat(cell.get("status").asString()).as(r.body()).isEqualTo("ok");
        return cell;
    }

    /** A shell line run as root inside the session; its stdout (it must exit 0). */
    private static String asRoot(int port, String id, String line) throws Exception {
        HttpResponse<String> r = post(port, "/v1/sessions/" + id + "/commands",
                JSON.writeValueAsString(Map.of("command", line, "user", "root")));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode result = JSON.readTree(r.body());
        assertThat(result.get("exit_code").asInt()).as(r.body()).isZero();
        return result.get("stdout").asString();
    }

    /** How many session-execute requests a replica served or forwarded, from its own metrics. */
    private static double executes(int port) throws Exception {
        double total = 0;
        for (String line : get(port, "/metrics").body().split("\n")) {
            if (line.startsWith("crucible_http_requests_total") && line.contains("/v1/sessions/{id}/execute")) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }

    @Test
    void aSessionKeepsItsStateAcrossReplicasAndResumesWhereTheDataDirIsSharedWhenItsReplicaDies() throws Exception {
        Capability.HAPROXY.require();
        Path shared = dataDir(dir.resolve("data"));
        int[] ports = {freePort(), freePort(), freePort()};
        List<ServeIT.Served> replicas = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            replicas.add(replica("r" + i, ports[i], shared, ports));
        }
        int lb = freePort();
        Balancer balancer = Balancer.start(dir, lb, ports);
        closing.add(balancer);
        balancer.awaitUp(3); // the balancer's own view: every replica passed its readiness checks

        HttpResponse<String> created = post(lb, "/v1/sessions", "{\"restore\": \"replay\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).get("id").asString();
        assertThat(id).matches("r[012]\\.[0-9a-f]{32}");
        cell(lb, id, "x = 0");
        for (int i = 0; i < 50; i++) {
            cell(lb, id, "x += 1");
        }
        assertThat(cell(lb, id, "x").get("result").asString()).isEqualTo("50");
        for (int port : ports) {
            assertThat(executes(port)).as("every replica took calls for the session").isPositive();
        }
        byte[] data = "files travel too\n".getBytes();
        HttpResponse<String> up = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + lb
                + "/v1/sessions/" + id + "/files/notes.txt")).PUT(HttpRequest.BodyPublishers.ofByteArray(data)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(up.statusCode()).as(up.body()).isEqualTo(201);
        for (int i = 0; i < 3; i++) {
            assertThat(get(lb, "/v1/sessions/" + id + "/files/notes.txt").body()).isEqualTo("files travel too\n");
        }

        // a session with a root of its own (where this host gives one): root's files in /etc and /root travel too
        boolean rooted = Files.isDirectory(shared.resolve("sessions").resolve(id).resolve("disk"));
        if (rooted) {
            assertThat(asRoot(lb, id, "echo x > /etc/app.conf && touch /root/mark && echo made")).isEqualTo("made\n");
        }

        int holder = Integer.parseInt(id.substring(1, 2));
        replicas.get(holder).process().destroyForcibly().waitFor(); // kill -9
        JsonNode resumed = cell(lb, id, "x");
        assertThat(resumed.get("result").asString()).as("replayed on the replica that took it over").isEqualTo("50");
        assertThat(resumed.get("resumed").asBoolean()).isTrue();
        assertThat(get(lb, "/v1/sessions/" + id + "/files/notes.txt").body()).isEqualTo("files travel too\n");
        if (rooted) { // on the adopting replica's uid block, each file still root's inside
            assertThat(asRoot(lb, id, "pwd; stat -c '%u:%g %n' /etc/app.conf /root/mark; cat /etc/app.conf"))
                    .isEqualTo("/root\n0:0 /etc/app.conf\n0:0 /root/mark\nx\n");
        }
        for (int i = 0; i < 6; i++) { // whichever live replica a call lands on, it reaches the new holder
            cell(lb, id, "x += 1");
        }
        assertThat(cell(lb, id, "x").get("result").asString()).isEqualTo("56");
        assertThat(HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + lb + "/v1/sessions/" + id))
                .DELETE().build(), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    }

    /**
     * The official E2B SDK, unmodified, drives a sandbox made on replica a through replica b, as a balancer that picks
     * the other replica sends it: E2B's control plane, envd (a streamed command, files) and the code interpreter are
     * forwarded to the holder as Crucible's own session routes are (issue 51 item 1).
     */
    @Test
    void theOfficialE2bSdkDrivesASandboxMadeOnOneReplicaThroughTheOther() throws Exception {
        Path shared = dataDir(dir.resolve("data"));
        int[] ports = {freePort(), freePort()};
        replica("a", ports[0], shared, ports);
        replica("b", ports[1], shared, ports);
        Path tests = Path.of("..", "clients", "node-tests").toAbsolutePath().normalize();
        Capability.NPM_CLIENTS.require(Files.isDirectory(tests.resolve("node_modules/@e2b/code-interpreter")) ? null
                : tests + "/node_modules/@e2b/code-interpreter is missing (npm ci there; ./run-tests does)");
        ProcessBuilder node = new ProcessBuilder("node", "e2b.mjs", "replicas").directory(tests.toFile())
                .redirectErrorStream(true);
        node.environment().keySet().removeIf(name -> name.startsWith("E2B_"));
        node.environment().put("E2B_API_URL", "http://127.0.0.1:" + ports[0]);
        node.environment().put("E2B_SANDBOX_URL", "http://127.0.0.1:" + ports[0]);
        node.environment().put("E2B_OTHER_URL", "http://127.0.0.1:" + ports[1]);
        node.environment().put("E2B_API_KEY", "e2b_" + "0123456789abcdef".repeat(2) + "01234567");
        Process run = node.start();
        String output = new String(run.getInputStream().readAllBytes());
        assertThat(run.waitFor(5, TimeUnit.MINUTES)).isTrue();
        assertThat(run.exitValue()).as(output).isZero();
        assertThat(output).contains("\"failed\":0").contains("replicas: killed through the other");
        double forwarded = 0;
        for (String line : get(ports[1], "/metrics").body().split("\n")) {
            if (line.startsWith("crucible_http_requests_total") && line.contains("e2b envd")) {
                forwarded += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        assertThat(forwarded).as("b took envd's calls (and sent them on)").isPositive();
    }

    @Test
    void withoutASharedDataDirASessionWhoseReplicaDiedIsLost() throws Exception {
        int[] ports = {freePort(), freePort()};
        ServeIT.Served a = replica("a", ports[0], dataDir(dir.resolve("a")), ports);
        replica("b", ports[1], dataDir(dir.resolve("b")), ports);
        HttpResponse<String> created = post(ports[0], "/v1/sessions", "{}");
        String id = JSON.readTree(created.body()).get("id").asString();
        cell(ports[1], id, "y = 7"); // forwarded from b to a
        assertThat(cell(ports[1], id, "y").get("result").asString()).isEqualTo("7");
        // a client that claims to be a forwarding replica gets no other replica's live session
        HttpResponse<String> spoofed = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports[1]
                + "/v1/sessions/" + id + "/execute")).header("Content-Type", "application/json")
                .header("X-Crucible-Forwarded-By", "a").POST(HttpRequest.BodyPublishers.ofString("{\"code\": \"y\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(spoofed.statusCode()).as(spoofed.body()).isEqualTo(404);
        assertThat(cell(ports[0], id, "y").get("result").asString()).as("still a's").isEqualTo("7");
        a.process().destroyForcibly().waitFor();
        HttpResponse<String> lost = post(ports[1], "/v1/sessions/" + id + "/execute", "{\"code\": \"y\"}");
        assertThat(lost.statusCode()).as(lost.body()).isEqualTo(410);
        assertThat(JSON.readTree(lost.body()).at("/error/code").asString()).isEqualTo("session_lost");
        assertThat(get(ports[1], "/v1/sessions/b.00000000000000000000000000000000").statusCode()).isEqualTo(404);
    }
}
