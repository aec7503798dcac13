package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.sandbox.Limits;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 25's peer fault: the replica that holds a session is stopped ({@code SIGSTOP}: its kernel still accepts
 * connections, nothing answers) while the session is called through another replica. The call answers within the
 * cell's timeout plus twice the grace, with a 504 naming the holder; the forwarding replica stays
 * ready and serves its own work meanwhile; once the holder goes on, the same call works through the other replica.
 */
class PeerStallIT {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private ServeIT.Served a;
    private ServeIT.Served b;

    @TempDir
    Path dir;

    @AfterEach
    void stop() throws Exception {
        for (ServeIT.Served s : new ServeIT.Served[] {a, b}) {
            if (s != null) {
                signal(s.process().pid(), "CONT");
                s.stop(Duration.ofSeconds(30));
            }
        }
    }

    @Test
    void aStoppedHolderIsAnsweredFor504WithinTheCellsBoundAndServesAgainOnceItGoesOn() throws Exception {
        int portA = freePort();
        int portB = freePort();
        String peers = "http://127.0.0.1:" + portA + ",http://127.0.0.1:" + portB;
        a = ServeIT.serveOn(portA, dataDir("a"), "--replica", "a", "--peers", peers, "--pool", "python=0,javascript=0");
        b = ServeIT.serveOn(portB, dataDir("b"), "--replica", "b", "--peers", peers, "--pool", "python=0,javascript=0");
        HttpResponse<String> made = post(portA, "/v1/sessions", "{\"language\":\"python\"}");
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        String id = JSON.readTree(made.body()).path("id").asString();
        assertThat(cell(portB, id, "x = 5", 5_000).body()).contains("\"status\":\"ok\""); // forwarded to a

        signal(a.process().pid(), "STOP");
        long timeout = 1_000;
        long t0 = System.nanoTime();
        HttpResponse<String> stalled = cell(portB, id, "print(x)", timeout);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertThat(stalled.statusCode()).as(stalled.body()).isEqualTo(504);
        JsonNode error = JSON.readTree(stalled.body()).path("error");
        assertThat(error.path("code").asString()).isEqualTo("peer_timeout");
        assertThat(error.path("message").asString()).contains("(a)");
        // the holder's bound (the cell's timeout and twice the grace), and the second a connection probe may take
        assertThat(ms).as("answered within the cell's bound").isLessThanOrEqualTo(
                timeout + 2 * Limits.GRACE_MS + 1_000);
        assertThat(ServeIT.get(portB, "/readyz").statusCode()).as("b still serves its own work").isEqualTo(200);
        assertThat(ServeIT.post(portB, "{\"language\":\"python\",\"code\":\"print(2)\"}").body()).contains("\"stdout\":\"2\\n\"");

        signal(a.process().pid(), "CONT");
        HttpResponse<String> again = cell(portB, id, "print(x)", 5_000);
        assertThat(again.body()).as("the session is still a's, variables kept").contains("\"stdout\":\"5\\n\"");
    }

    private static HttpResponse<String> cell(int port, String id, String code, long timeoutMs) throws Exception {
        return post(port, "/v1/sessions/" + id + "/execute", JSON.writeValueAsString(Map.of("code", code,
                "timeout_ms", timeoutMs)));
    }

    private static HttpResponse<String> post(int port, String path, String json) throws Exception {
        return ServeIT.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private Path dataDir(String name) throws Exception {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path d = Files.createDirectories(dir.resolve(name));
        Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
        return d;
    }

    private static int freePort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static void signal(long pid, String signal) throws Exception {
        new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
    }
}
