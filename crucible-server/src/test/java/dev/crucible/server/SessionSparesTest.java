package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestDirs;
import dev.crucible.TestHost;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Sessions made ahead (issue 33 item 2): a server keeps a spare Python session ready, and a create that asks for its
 * limits and no network takes it. A spare is no one's until taken: never listed, never another token's, never
 * reaped, never kept across a restart; it counts against the caps and budgets and is let go when a session asked for
 * needs what it holds. The real server and sandboxes, on a data directory of their own.
 */
class SessionSparesTest {
    private static ServerConfig config(Path data, int maxSessions, int perOwner) {
        ServerConfig config = Http.config().withDataDir(data);
        return config.withPort(0).withTokens(Set.of("token-a", "token-b")).withPool(Map.of())
                .withSessions(config.sessions().withSpares(1).withMaxSessions(maxSessions, perOwner));
    }

    @Test
    void aCreateTakesTheSpareForItsTokenAloneAndANewOneIsMadeBehindIt() throws Exception {
        Path data = TestDirs.create("crucible-spares-");
        try (CrucibleServer server = CrucibleServer.start(config(data, 20, 5), TestHost.crucible())) {
            Http a = Http.to(server, "token-a");
            Http b = Http.to(server, "token-b");
            String spare = awaitSpare(a, data, List.of());
            assertThat(SessionApiTest.json(a.get("/v1/sessions")).path("sessions")).as("a spare is no one's").isEmpty();

            String id = SessionApiTest.create(a, "{\"language\": \"python\"}");
            assertThat(id).as("the create took the spare").isEqualTo(spare);
            JsonNode record = SessionApiTest.JSON.readTree(data.resolve("sessions").resolve(id).resolve("session.json")
                    .toFile());
            assertThat(record.path("owner").asString()).isEqualTo(owner("token-a"));
            assertThat(SessionApiTest.cell(a, id, "import os; x = 41; sorted(os.listdir('/workspace'))")
                    .path("result").asString()).isEqualTo("[]");
            assertThat(SessionApiTest.cell(a, id, "x + 1").path("result").asString()).isEqualTo("42");
            assertThat(SessionApiTest.cell(a, id, "os.getuid()").path("result").asString()).isEqualTo("1000");
            assertThat(SessionApiTest.cell(a, id, "os.nice(0)").path("result").asString())
                    .as("made at a lower priority, but its interpreter runs at the normal one").isEqualTo("0");
            assertThat(SessionApiTest.json(a.get("/v1/sessions")).path("sessions")).hasSize(1);
            assertThat(b.get("/v1/sessions/" + id).statusCode()).as("another token's").isEqualTo(404);
            assertThat(b.postJson("/v1/sessions/" + id + "/execute", "{\"code\": \"1\"}").statusCode()).isEqualTo(404);
            assertThat(SessionApiTest.json(b.get("/v1/sessions")).path("sessions")).isEmpty();

            String next = awaitSpare(a, data, List.of(id));
            assertThat(next).as("a new spare, not the one taken").isNotEqualTo(id);
            String other = SessionApiTest.create(b, "{}");
            assertThat(other).as("the default language takes it too").isEqualTo(next);
            assertThat(SessionApiTest.cell(b, other, "'x' in globals()").path("result").asString())
                    .as("nothing of another session").isEqualTo("False");

            // a create asking for other limits, or for network, is made for it: the spare stays
            String third = awaitSpare(a, data, List.of(id, other));
            String own = SessionApiTest.create(a, "{\"limits\": {\"memory_mb\": 256}}");
            assertThat(own).isNotEqualTo(third);
            assertThat(sessionDirs(data)).contains(third, own);
            assertThat(SessionApiTest.cell(a, own, "6 * 7").path("result").asString()).isEqualTo("42");
            String metrics = a.get("/metrics").body();
            assertThat(SessionOvercommitTest.gauge(metrics, "crucible_sessions_spares")).isEqualTo(1);
            assertThat(SessionOvercommitTest.gauge(metrics, "crucible_sessions")).isEqualTo(3);
            for (String s : List.of(id, own)) {
                assertThat(a.delete("/v1/sessions/" + s).statusCode()).isEqualTo(200);
            }
            assertThat(b.delete("/v1/sessions/" + other).statusCode()).isEqualTo(200);
        }
        assertThat(sessionDirs(data)).as("the spare removed with the server").isEmpty();
        await("no process of a session uid left").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(() -> TestHost.processesOfUids(62000, 64000), count -> count == 0);
    }

    @Test
    void aSpareWhoseInterpreterDiedWhileItWaitedIsNeverHandedOut() throws Exception {
        Path data = TestDirs.create("crucible-spares-");
        try (CrucibleServer server = CrucibleServer.start(config(data, 20, 5), TestHost.crucible())) {
            Http a = Http.to(server, "token-a");
            String spare = awaitSpare(a, data, List.of());
            int uid = (Integer) Files.getAttribute(data.resolve("sessions").resolve(spare).resolve("workspace"),
                    "unix:uid");
            Process kill = new ProcessBuilder("pkill", "-KILL", "-U", Integer.toString(uid)).start();
            assertThat(kill.waitFor()).as("the spare's processes killed").isZero();
            await("the spare's sandbox gone, its launcher too").atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20)).until(() -> TestHost.processesOfUids(uid, uid + 1) == 0
                            && ProcessHandle.current().descendants().noneMatch(p -> p.isAlive()
                                    && p.info().arguments().map(args -> String.join(" ", args).contains(spare))
                                    .orElse(false)));
            String id = SessionApiTest.create(a, "{}");
            assertThat(id).as("a session made for it, not the dead spare").isNotEqualTo(spare);
            JsonNode cell = SessionApiTest.cell(a, id, "6 * 7");
            assertThat(cell.path("result").asString()).isEqualTo("42");
            assertThat(cell.path("restarted").asBoolean()).isFalse();
            assertThat(sessionDirs(data)).as("the dead spare removed").doesNotContain(spare);
            assertThat(a.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void aSpareLeftByACrashIsRemovedAtTheNextStartNeverKeptAsASession() throws Exception {
        Path data = TestDirs.create("crucible-spares-");
        byte[] record;
        String spare;
        try (CrucibleServer server = CrucibleServer.start(config(data, 20, 5), TestHost.crucible())) {
            spare = awaitSpare(Http.to(server, "token-a"), data, List.of());
            record = Files.readAllBytes(data.resolve("sessions").resolve(spare).resolve("session.json"));
        }
        // what a kill -9 leaves: the spare's directory and its record (its image unmounted by the server's close here)
        Path dir = Files.createDirectories(data.resolve("sessions").resolve(spare));
        Files.write(dir.resolve("session.json"), record);
        try (CrucibleServer server = CrucibleServer.start(config(data, 20, 5).withSessions(config(data, 20, 5)
                .sessions().withSpares(0)), TestHost.crucible())) {
            Http a = Http.to(server, "token-a");
            assertThat(Files.exists(dir)).as("removed at start").isFalse();
            assertThat(a.get("/v1/sessions/" + spare).statusCode()).isEqualTo(404);
            assertThat(SessionApiTest.json(a.get("/v1/sessions")).path("sessions")).isEmpty();
            assertThat(Http.to(server, null).get("/v1/sessions/" + spare).statusCode()).isIn(401, 404);
        }
    }

    @Test
    void aSpareCountsAgainstTheCapsAndIsLetGoForASessionAskedFor() throws Exception {
        Path data = TestDirs.create("crucible-spares-");
        // two sessions at most: a spare is made only with room for one more besides it
        try (CrucibleServer server = CrucibleServer.start(config(data, 2, 1), TestHost.crucible())) {
            Http a = Http.to(server, "token-a");
            Http b = Http.to(server, "token-b");
            String spare = awaitSpare(a, data, List.of());
            // a's session is made for it (other limits) beside the spare: the cap of 2 is then full
            String mine = SessionApiTest.create(a, "{\"limits\": {\"memory_mb\": 256}}");
            assertThat(sessionDirs(data)).containsExactlyInAnyOrder(spare, mine);
            // a holds its maximum of 1: refused, and the spare is not let go (nor taken) for a refusal it would not
            // lift, whether the create could have taken it or not
            for (String asked : List.of("{\"limits\": {\"memory_mb\": 256}}", "{}")) {
                HttpResponse<String> refused = a.postJson("/v1/sessions", asked);
                assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
                assertThat(SessionApiTest.error(refused)).isEqualTo("too_many_sessions");
                assertThat(sessionDirs(data)).containsExactlyInAnyOrder(spare, mine);
            }
            // b's session with other limits needs the spare's place under the server's cap: the spare goes
            String bs = SessionApiTest.create(b, "{\"limits\": {\"memory_mb\": 256}}");
            assertThat(bs).isNotEqualTo(spare);
            assertThat(sessionDirs(data)).containsExactlyInAnyOrder(mine, bs);
            assertThat(SessionApiTest.cell(b, bs, "1 + 1").path("result").asString()).isEqualTo("2");
            // with one session of two, no spare: it would leave no room for a session besides it
            assertThat(a.delete("/v1/sessions/" + mine).statusCode()).isEqualTo(200);
            assertThat(sessionDirs(data)).containsExactly(bs);
            assertThat(SessionOvercommitTest.gauge(a.get("/metrics").body(), "crucible_sessions_spares")).isZero();
            // with none, a delete makes one again
            assertThat(b.delete("/v1/sessions/" + bs).statusCode()).isEqualTo(200);
            awaitSpare(a, data, List.of());
        }
        assertThat(sessionDirs(data)).isEmpty();
    }

    /** Waits for a spare to be ready: the one session directory not in {@code known}. */
    static String awaitSpare(Http http, Path data, List<String> known) {
        await("a spare made").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() ->
                SessionOvercommitTest.gauge(http.get("/metrics").body(), "crucible_sessions_spares") == 1);
        List<String> fresh = sessionDirs(data).stream().filter(d -> !known.contains(d)).toList();
        assertThat(fresh).hasSize(1);
        return fresh.get(0);
    }

    static List<String> sessionDirs(Path data) {
        try (Stream<Path> dirs = Files.list(data.resolve("sessions"))) {
            return dirs.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String owner(String token) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(
                StandardCharsets.UTF_8)));
    }
}
