package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import java.io.IOException;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 25, the data directory's file system full (a small loop-mounted ext4 of the test's own): while it is full,
 * sessions write files, cells append to their logs, a session record is rewritten and a session is created; nothing
 * stored before is lost or corrupted, the API answers 507 {@code data_dir_full} where it cannot keep what it is given
 * (never a 500, never a hang), a server restarted on the full directory finds its sessions with their files, and all
 * works again once space is freed.
 */
class DataDirFullTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    /** Every answer comes in this bound (a cell's own timeout is 10 s): no request may hang on a full disk. */
    static final Duration ANSWER_BOUND = Duration.ofSeconds(30);

    @TempDir
    Path temp;

    /** An ext4 file system in an image file, loop-mounted, that the test fills and frees. */
    static final class LoopDisk implements AutoCloseable {
        final Path mount;
        private final Path filler;

        LoopDisk(Path dir, int mebibytes) throws Exception {
            Path image = dir.resolve("disk.img");
            try (var file = FileChannel.open(image, StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE)) {
                file.truncate(0).write(ByteBuffer.allocate(1), (long) mebibytes * 1024 * 1024 - 1);
            }
            run("mkfs.ext4", "-q", "-F", "-m", "0", image.toString());
            mount = Files.createDirectory(dir.resolve("mnt"));
            run("mount", "-o", "loop", image.toString(), mount.toString());
            Files.setPosixFilePermissions(mount, PosixFilePermissions.fromString("rwxr-xr-x"));
            filler = mount.resolve("filler");
        }

        /** Writes a file until the file system refuses another byte, and syncs it: nothing is left to anyone. */
        void fill() throws IOException {
            byte[] chunk = new byte[1 << 20];
            try (OutputStream out = Files.newOutputStream(filler, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND)) {
                for (int size = chunk.length; size >= 512; size /= 2) {
                    try {
                        while (true) {
                            out.write(chunk, 0, size);
                        }
                    } catch (IOException full) {
                        assertThat(full.getMessage()).contains("No space left on device");
                    }
                }
            }
            try (var channel = FileChannel.open(filler, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
            assertThat(Files.getFileStore(mount).getUsableSpace()).as("the file system is full").isZero();
        }

        void free() throws IOException {
            Files.delete(filler);
        }

        /** Unmounts, once nothing holds the file system (a workspace unmounted lazily frees its loop device late). */
        @Override
        public void close() throws Exception {
            try {
                await("nothing holding " + mount + ": it unmounts").pollInSameThread().atMost(Duration.ofSeconds(30))
                        .pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100))
                        .untilAsserted(() -> run("umount", mount.toString()));
            } catch (ConditionTimeoutException busy) {
                run("umount", "-l", mount.toString());
                throw busy;
            }
        }

        static void run(String... argv) throws Exception {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(String.join(" ", argv) + ": " + out).isZero();
        }
    }

    private static ServerConfig config(Path data) throws IOException {
        ServerConfig defaults = Http.config();
        Files.delete(defaults.sessions().dataDir()); // the test's own directory instead
        ServerConfig config = defaults.withDataDir(data).withPort(0).withTokens(Set.of()).withPool(Map.of());
        return config.withSessions(config.sessions().withCaps(1024 * 1024, 8L * 1024 * 1024, 16L * 1024 * 1024));
    }

    /** A request that answers in {@link #ANSWER_BOUND}, never with a 500. */
    private static HttpResponse<String> timed(Request request) throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> r = request.send();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answered in time: " + r.body())
                .isLessThan(ANSWER_BOUND);
        assertThat(r.statusCode()).as(r.body()).isNotEqualTo(500);
        return r;
    }

    interface Request {
        HttpResponse<String> send() throws Exception;
    }

    private static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    private static void assertDataDirFull(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(507);
        assertThat(json(r).at("/error/code").asString()).isEqualTo("data_dir_full");
        assertThat(json(r).at("/error/message").asString()).contains("free space");
    }

    private static JsonNode cell(Http http, String id, String code) throws Exception {
        HttpResponse<String> r = timed(() -> http.postJson("/v1/sessions/" + id + "/execute",
                JSON.writeValueAsString(Map.of("code", code))));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(json(r).get("status").asString()).as(r.body()).isEqualTo("ok");
        return json(r);
    }

    private static void assertFile(Http http, String id, String path, byte[] expected) throws Exception {
        HttpResponse<byte[]> r = http.bytes("/v1/sessions/" + id + "/files/" + path);
        assertThat(r.statusCode()).as(path).isEqualTo(200);
        assertThat(r.body()).as(path + " byte for byte").isEqualTo(expected);
    }

    private static byte[] random(int bytes, int seed) {
        byte[] data = new byte[bytes];
        new Random(seed).nextBytes(data);
        return data;
    }

    @Test
    void aFullDataDirectoryLosesNothingAnswers507WhereItMustAndRecoversOnceSpaceIsFreed() throws Exception {
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (LoopDisk disk = new LoopDisk(temp, 64)) {
            Path data = Files.createDirectory(disk.mount.resolve("data"));
            ServerConfig config = config(data);
            byte[] before = random(1 << 20, 1);
            byte[] whileFull = random(1 << 20, 2);
            List<String> replayed = new ArrayList<>(List.of("x"));
            String id;
            try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
                Http http = Http.to(server, null);
                HttpResponse<String> created = timed(() -> http.postJson("/v1/sessions", "{\"restore\": \"replay\"}"));
                assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
                id = json(created).get("id").asString();
                assertThat(timed(() -> http.put("/v1/sessions/" + id + "/files/before.bin", before)).statusCode())
                        .isEqualTo(201);
                cell(http, id, "x = 41");
                cell(http, id, "open('inside.txt', 'w').write('made inside before')");

                disk.fill();

                // an upload: the workspace's room is its own, taken when the session was made; kept, never lost later
                HttpResponse<String> upload = timed(() -> http.put("/v1/sessions/" + id + "/files/while-full.bin",
                        whileFull));
                assertThat(upload.statusCode()).as(upload.body()).isEqualTo(201);
                // a cell whose log line needs a new block: logged whole (then replayed), or refused unrun as 507
                String padded = "y = 42  # " + "p".repeat(6000);
                HttpResponse<String> y = timed(() -> http.postJson("/v1/sessions/" + id + "/execute",
                        JSON.writeValueAsString(Map.of("code", padded))));
                if (y.statusCode() == 200) {
                    assertThat(json(y).get("status").asString()).as(y.body()).isEqualTo("ok");
                    replayed.add("y");
                } else {
                    assertDataDirFull(y);
                }
                // a cell that writes into its workspace from inside the sandbox: what it was told was written stays
                JsonNode inside = cell(http, id, "try:\n    open('inside-full.bin', 'wb').write(b'i' * 2000000)\n"
                        + "    print('written')\nexcept OSError as e:\n    print(e.errno)");
                assertThat(inside.get("stdout").asString()).isEqualTo("written\n");
                // rewriting the session's record (its egress locked): whole or refused, never half
                HttpResponse<String> narrowed = timed(() -> http.postJson("/v1/sessions/" + id + "/network",
                        "{\"allow\": []}"));
                if (narrowed.statusCode() != 200) {
                    assertDataDirFull(narrowed);
                }
                assertDataDirFull(timed(() -> http.postJson("/v1/sessions", "{}")));
                assertFile(http, id, "before.bin", before);
                Path record = data.resolve("sessions").resolve(id).resolve("session.json");
                assertThat(JSON.readTree(record.toFile()).get("id").asString()).isEqualTo(id);
                assertThat(record.resolveSibling("session.json.tmp")).as("no half record left").doesNotExist();
            }

            // restarted on the still-full directory: the session, its files and its cells are all there
            try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
                Http http = Http.to(server, null);
                assertThat(json(timed(() -> http.get("/v1/sessions"))).get("sessions").findValuesAsString("id"))
                        .containsExactly(id);
                assertFile(http, id, "before.bin", before);
                assertFile(http, id, "inside.txt", "made inside before".getBytes(StandardCharsets.UTF_8));
                assertFile(http, id, "while-full.bin", whileFull);
                assertFile(http, id, "inside-full.bin", "i".repeat(2_000_000).getBytes(StandardCharsets.UTF_8));
                JsonNode resumed = cell(http, id, "print(x)");
                assertThat(resumed.get("resumed").asBoolean()).isTrue();
                assertThat(resumed.get("stdout").asString()).isEqualTo("41\n");
                if (replayed.contains("y")) {
                    assertThat(cell(http, id, "print(y)").get("stdout").asString()).isEqualTo("42\n");
                }

                disk.free();

                cell(http, id, "z = 43");
                replayed.add("z");
                byte[] after = random(1 << 20, 3);
                assertThat(timed(() -> http.put("/v1/sessions/" + id + "/files/after.bin", after)).statusCode())
                        .isEqualTo(201);
                assertFile(http, id, "after.bin", after);
                HttpResponse<String> another = timed(() -> http.postJson("/v1/sessions", "{}"));
                assertThat(another.statusCode()).as(another.body()).isEqualTo(201);
                String other = json(another).get("id").asString();
                assertThat(timed(() -> http.put("/v1/sessions/" + other + "/files/f.txt", new byte[] {'o', 'k'}))
                        .statusCode()).isEqualTo(201);
                assertThat(cell(http, other, "print(open('f.txt').read())").get("stdout").asString()).isEqualTo("ok\n");
                assertThat(timed(() -> http.delete("/v1/sessions/" + other)).statusCode()).isEqualTo(200);
            }

            // and again: every cell that was answered ok is replayed, none glued to a line cut short by the full disk
            try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
                Http http = Http.to(server, null);
                String names = String.join(", ", replayed);
                JsonNode all = cell(http, id, "print(" + names + ")");
                assertThat(all.get("resumed").asBoolean()).isTrue();
                assertThat(all.get("stdout").asString()).isEqualTo(String.join(" ", replayed.stream()
                        .map(n -> switch (n) {
                            case "x" -> "41";
                            case "y" -> "42";
                            default -> "43";
                        }).toList()) + "\n");
                assertThat(timed(() -> http.delete("/v1/sessions/" + id)).statusCode()).isEqualTo(200);
            }
        }
    }
}
