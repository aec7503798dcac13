package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.sandbox.Isolation;
import dev.crucible.testhost.Capability;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Named snapshots over HTTP (issue 30, item 3), against a real server whose runtimes TOML puts Python behind gVisor and
 * leaves JavaScript on the namespace tier: a snapshot outlives its session and the server, new sessions come up from
 * it with its files (and memory behind gVisor, replay under namespaces), a namespace session goes on running while
 * its files are copied, a token sees only its own snapshots, and what a session planted in its workspace (links, a
 * FIFO, a directory swapped for a link while the copy runs) never brings a host file into a snapshot.
 */
class SessionSnapshotApiTest extends TwoTierServer.Fixture {
    private static final String MINE = "snapshot-token-a";
    private static final String OTHER = "snapshot-token-b";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Override
    Set<String> tokens() {
        return Set.of(MINE, OTHER);
    }

    private String command(String id, String command) throws Exception {
        return post("/v1/sessions/" + id + "/commands", "{\"command\": " + JSON.writeValueAsString(command) + "}")
                .path("stdout").asString();
    }

    private Path snapshotsDir() {
        return data.resolve("data").resolve("snapshots");
    }

    @Test
    void aNamespaceSessionGoesOnWhileItsSnapshotIsTakenAndNewSessionsComeUpFromIt() throws Exception {
        String id = post("/v1/sessions", "{\"language\": \"javascript\", \"restore\": \"replay\"}").get("id").asString();
        assertThat(cell(id, "globalThis.x = 41; require('fs').writeFileSync('kept.txt', 'before'); x + 1"))
                .isEqualTo("42");
        JsonNode snap = post("/v1/sessions/" + id + "/snapshots", "{\"name\": \"step-1\"}");
        assertThat(snap.get("name").asString()).isEqualTo("step-1");
        assertThat(snap.get("session_id").asString()).isEqualTo(id);
        assertThat(snap.get("keeps").asString()).isEqualTo("replay");
        assertThat(snap.get("bytes").asLong()).isGreaterThanOrEqualTo(6);
        assertThat(SessionApiTest.json(http.get("/v1/sessions/" + id)).get("state").asString())
                .as("the session was not stopped").isEqualTo("running");
        assertThat(cell(id, "require('fs').writeFileSync('kept.txt', 'after'); x = 7")).isEqualTo("7");

        JsonNode made = post("/v1/sessions", "{\"snapshot\": \"step-1\"}");
        String child = made.get("id").asString();
        assertThat(child).isNotEqualTo(id);
        assertThat(made.get("restored").asString()).isEqualTo("replay");
        assertThat(made.get("state").asString()).isEqualTo("running");
        assertThat(cell(child, "x + ' ' + require('fs').readFileSync('kept.txt', 'utf8')"))
                .as("the variables replayed, the files as they were at the snapshot").isEqualTo("'41 before'");
        assertThat(cell(id, "x")).as("the session it was taken of is its own").isEqualTo("7");

        assertThat(http.postJson("/v1/sessions/" + id + "/snapshots", "{\"name\": \"step-1\"}").statusCode())
                .as("a name is taken once per token").isEqualTo(409);
        for (String bad : List.of("../x", "", ".hidden", "a/b", "x".repeat(65))) {
            HttpResponse<String> r = http.postJson("/v1/sessions/" + id + "/snapshots", "{\"name\": "
                    + JSON.writeValueAsString(bad) + "}");
            assertThat(r.statusCode()).as(bad).isEqualTo(400);
        }
        assertThat(http.postJson("/v1/sessions", "{\"snapshot\": \"step-1\", \"language\": \"python\"}").statusCode())
                .as("a snapshot's language is its own").isEqualTo(400);

        Http other = Http.to(server, OTHER);
        assertThat(SessionApiTest.json(other.get("/v1/snapshots")).get("snapshots")).as("another token sees none")
                .isEmpty();
        HttpResponse<String> stolen = other.postJson("/v1/sessions", "{\"snapshot\": \"step-1\"}");
        assertThat(stolen.statusCode()).isEqualTo(404);
        assertThat(stolen.body()).contains("snapshot_not_found");
        assertThat(other.delete("/v1/snapshots/step-1").statusCode()).isEqualTo(404);
        assertThat(other.postJson("/v1/sessions/" + id + "/snapshots", "{\"name\": \"mine\"}").statusCode())
                .as("nor snapshots another's session").isEqualTo(404);

        JsonNode listed = SessionApiTest.json(http.get("/v1/snapshots")).get("snapshots");
        assertThat(listed).hasSize(1);
        assertThat(listed.get(0).get("name").asString()).isEqualTo("step-1");
        assertThat(http.delete("/v1/snapshots/step-1").statusCode()).isEqualTo(200);
        assertThat(SessionApiTest.json(http.get("/v1/snapshots")).get("snapshots")).isEmpty();
        try (var left = Files.list(snapshotsDir())) {
            assertThat(left.toList()).as("a deleted snapshot leaves nothing").isEmpty();
        }
        assertThat(http.postJson("/v1/sessions", "{\"snapshot\": \"step-1\"}").statusCode()).isEqualTo(404);
    }

    @Test
    void aSnapshotBehindGvisorKeepsTheMemoryAndOutlivesItsSessionAndTheServer() throws Exception {
        String why = engine.sandbox().host().isolationUnavailable(Isolation.GVISOR);
        Capability.GVISOR.require(why);
        String id = post("/v1/sessions", "{\"language\": \"python\"}").get("id").asString();
        assertThat(cell(id, "x = 41; f = open('notes.txt', 'w'); f.write('one '); f.flush(); x + 1")).isEqualTo("42");
        JsonNode snap = post("/v1/sessions/" + id + "/snapshots", "{\"name\": \"episode\"}");
        assertThat(snap.get("keeps").asString()).isEqualTo("memory");
        assertThat(cell(id, "f.write('two'); f.close(); x = 0; open('notes.txt').read()"))
                .as("the session comes back from its memory at its next call").isEqualTo("'one two'");
        http.delete("/v1/sessions/" + id);

        stop();
        serve();
        List<String> made = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            JsonNode s = post("/v1/sessions", "{\"snapshot\": \"episode\"}");
            assertThat(s.get("restored").asString()).isEqualTo("memory");
            made.add(s.get("id").asString());
        }
        assertThat(cell(made.get(0), "f.write('A'); f.close(); x += 1; (x, open('notes.txt').read())"))
                .as("memory, variables and the open file as at the snapshot").isEqualTo("(42, 'one A')");
        assertThat(cell(made.get(1), "(x, open('notes.txt').read())")).as("each copy is its own")
                .isEqualTo("(41, 'one ')");
        Path memory = Files.list(snapshotsDir()).findFirst().orElseThrow().resolve("memory");
        assertThat(Files.getAttribute(memory, "unix:uid")).as("a snapshot's saved sandbox stays the server's")
                .isEqualTo(0);
        assertThat(Files.getPosixFilePermissions(snapshotsDir())).hasSize(3); // rwx------
    }

    @Test
    void whatASessionPlantsInItsWorkspaceNeverBringsAHostFileIntoItsSnapshot() throws Exception {
        String id = post("/v1/sessions", "{\"language\": \"javascript\"}").get("id").asString();
        command(id, "cd /workspace && mkdir -p d && echo mine > stable.txt && ln -s /etc/hostname host-link"
                + " && mkfifo pipe && ln -s /etc d2");
        // a background process swaps the directory for a link to /etc, over and over, while snapshots are taken
        post("/v1/sessions/" + id + "/commands", "{\"command\": \"cd /workspace; while true; do mv d d.x;"
                + " ln -s /etc d; rm d; mv d.x d; done\", \"background\": true}");
        for (int i = 0; i < 8; i++) {
            post("/v1/sessions/" + id + "/snapshots", "{\"name\": \"race-" + i + "\"}");
        }
        try (var walk = Files.walk(snapshotsDir())) {
            for (Path p : walk.toList()) {
                String name = p.getFileName().toString();
                assertThat(name).as(p + ": nothing of the host's /etc").isNotIn("passwd", "hostname", "os-release",
                        "shadow", "hosts");
                if (name.equals("host-link") || name.equals("d2")) {
                    assertThat(Files.isSymbolicLink(p)).as(p + " is copied as a link, never followed").isTrue();
                }
                assertThat(name).as("a FIFO is left out").isNotEqualTo("pipe");
            }
        }
        String child = post("/v1/sessions", "{\"snapshot\": \"race-0\"}").get("id").asString();
        assertThat(command(child, "cat /workspace/stable.txt")).isEqualTo("mine\n");
        assertThat(command(child, "readlink /workspace/host-link")).isEqualTo("/etc/hostname\n");
    }
}
