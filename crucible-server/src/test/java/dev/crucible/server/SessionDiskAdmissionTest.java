package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 50, item 1: sessions are admitted against the room the data directory's file system really has, decided for
 * concurrent creates under the lock that takes their numbers. On a small loop-mounted ext4 of the test's own, many
 * creates at once (the disk partly held by others) each either get a session or a clean 507 {@code data_dir_full}
 * before anything is written; the
 * session directories left are exactly the sessions answered, each of them works, and the disk keeps its headroom
 * (nothing filled it: records and cell logs still have room).
 */
class SessionDiskAdmissionTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final long QUOTA = 16L * 1024 * 1024;
    static final int CREATES = 24;

    @TempDir
    Path temp;

    @Test
    void concurrentCreatesOnASmallDiskAreEachAdmittedOrRefusedCleanlyAndLeaveOnlyTheSessionsAnswered()
            throws Exception {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (DataDirFullTest.LoopDisk disk = new DataDirFullTest.LoopDisk(temp, 160)) {
            Path data = dataDirOn(disk);
            ServerConfig config = config(data).withTokens(Set.of());
            List<String> created = new ArrayList<>();
            try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
                Http http = Http.to(server, null);
                List<HttpResponse<String>> answers = new ArrayList<>();
                try (ExecutorService clients = Executors.newFixedThreadPool(CREATES)) {
                    List<Future<HttpResponse<String>>> sent = new ArrayList<>();
                    for (int i = 0; i < CREATES; i++) {
                        sent.add(clients.submit(() -> http.postJson("/v1/sessions", "{}")));
                    }
                    for (Future<HttpResponse<String>> answer : sent) {
                        answers.add(answer.get());
                    }
                }
                for (HttpResponse<String> r : answers) {
                    JsonNode body = JSON.readTree(r.body());
                    if (r.statusCode() == 201) {
                        created.add(body.get("id").asString());
                    } else {
                        assertThat(r.statusCode()).as(r.body()).isEqualTo(507);
                        assertThat(body.at("/error/code").asString()).as(r.body()).isEqualTo("data_dir_full");
                        assertThat(body.at("/error/message").asString()).contains("MiB free").contains("free space");
                    }
                }
                assertThat(created).as("the disk holds some sessions, not all").isNotEmpty().hasSizeLessThan(CREATES);
                assertThat(sessionDirs(data)).as("a directory per session answered, no other")
                        .containsExactlyInAnyOrderElementsOf(created);
                assertThat(Files.getFileStore(data).getUsableSpace()).as("the headroom is left free")
                        .isGreaterThanOrEqualTo((long) (Files.getFileStore(data).getTotalSpace() * 0.05) - QUOTA / 4);
                for (String id : created) {
                    HttpResponse<String> cell = http.postJson("/v1/sessions/" + id + "/execute",
                            "{\"code\": \"open('f', 'w').write('ok'); print(open('f').read())\"}");
                    assertThat(cell.statusCode()).as(cell.body()).isEqualTo(200);
                    assertThat(JSON.readTree(cell.body()).get("stdout").asString()).isEqualTo("ok\n");
                }
                HttpResponse<String> refused = http.postJson("/v1/sessions", "{}");
                assertThat(refused.statusCode()).as("still full: " + refused.body()).isEqualTo(507);
                for (String id : created) {
                    assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
                }
                assertThat(sessionDirs(data)).as("nothing left once deleted").isEmpty();
                // a deleted session's blocks come back once its loop device is let go (a sandbox's namespace can
                // hold the file system a moment after its kill), and then there is room again
                AtomicReference<HttpResponse<String>> again = new AtomicReference<>();
                await("room again once the sessions are deleted").atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
                            again.set(http.postJson("/v1/sessions", "{}"));
                            assertThat(again.get().statusCode()).as(again.get().body()).isEqualTo(201);
                        });
                assertThat(http.delete("/v1/sessions/" + JSON.readTree(again.get().body()).get("id").asString())
                        .statusCode()).isEqualTo(200);
            }
            assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).as("no workspace mounted under " + data)
                    .doesNotContain(data.toString() + "/");
        }
    }

    /**
     * The same through E2B's control plane, as its SDK makes a sandbox (an environment variable set by a first cell):
     * a sandbox is made whole (session, first cell, E2B's record) or refused with a 507 that leaves no session behind,
     * never a 500.
     */
    @Test
    void concurrentE2bCreatesOnASmallDiskAreEachMadeWholeOrRefusedCleanly() throws Exception {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (DataDirFullTest.LoopDisk disk = new DataDirFullTest.LoopDisk(temp, 160)) {
            Path data = dataDirOn(disk);
            try (CrucibleServer server = CrucibleServer.start(config(data).withTokens(Set.of(E2B_KEY)),
                    TestHost.crucible())) {
                Http e2b = new Http(Http.to(server, null).client(), "http://127.0.0.1:" + server.port(), null);
                String body = JSON.writeValueAsString(Map.of("templateID", "base", "timeout", 300, "envVars",
                        Map.of("GREETING", "hi"), "metadata", Map.of("run", "disk")));
                List<HttpResponse<String>> answers = new ArrayList<>();
                try (ExecutorService clients = Executors.newFixedThreadPool(CREATES)) {
                    List<Future<HttpResponse<String>>> sent = new ArrayList<>();
                    for (int i = 0; i < CREATES; i++) {
                        sent.add(clients.submit(() -> e2b.send(HttpRequest.newBuilder(
                                URI.create(e2b.base() + "/sandboxes")).header("X-API-KEY", E2B_KEY)
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(body)))));
                    }
                    for (Future<HttpResponse<String>> answer : sent) {
                        answers.add(answer.get());
                    }
                }
                List<String> made = new ArrayList<>();
                for (HttpResponse<String> r : answers) {
                    assertThat(r.statusCode()).as(r.body()).isIn(201, 507);
                    if (r.statusCode() == 201) {
                        made.add(JSON.readTree(r.body()).get("sandboxID").asString());
                    }
                }
                assertThat(made).as("the disk holds some sandboxes, not all").isNotEmpty().hasSizeLessThan(CREATES);
                assertThat(sessionDirs(data)).as("a session per sandbox answered, no other").hasSameSizeAs(made);
                for (String id : made) {
                    HttpResponse<String> gone = e2b.send(HttpRequest.newBuilder(URI.create(
                            e2b.base() + "/sandboxes/" + id)).header("X-API-KEY", E2B_KEY).DELETE());
                    assertThat(gone.statusCode()).as(gone.body()).isIn(200, 204);
                }
                assertThat(sessionDirs(data)).as("nothing left once deleted").isEmpty();
            }
        }
    }

    static final String E2B_KEY = "e2b_" + "0123456789abcdef".repeat(2) + "01234567";

    /** The data dir on {@code disk}, beside 64 MiB of what else a disk holds (images, logs, other programs). */
    private static Path dataDirOn(DataDirFullTest.LoopDisk disk) throws Exception {
        Path data = Files.createDirectory(disk.mount.resolve("data"));
        Files.write(disk.mount.resolve("others.bin"), new byte[64 << 20]);
        return data;
    }

    private static ServerConfig config(Path data) throws Exception {
        ServerConfig defaults = Http.config();
        Files.delete(defaults.sessions().dataDir());
        ServerConfig config = defaults.withDataDir(data).withPort(0).withPool(Map.of());
        return config.withSessions(config.sessions().withCaps(1024 * 1024, 8L * 1024 * 1024, QUOTA)
                .withMaxSessions(CREATES * 2, CREATES * 2));
    }

    private static List<String> sessionDirs(Path data) throws Exception {
        try (Stream<Path> dirs = Files.list(data.resolve("sessions"))) {
            return dirs.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).toList();
        }
    }
}
