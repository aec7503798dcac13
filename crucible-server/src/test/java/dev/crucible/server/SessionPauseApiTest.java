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

/**
 * Pausing and resuming sessions over HTTP (issue 30, item 1), against a real server whose runtimes TOML puts Python
 * behind gVisor and leaves JavaScript on the namespace tier: behind gVisor the session comes back with its memory and
 * open files, across a restart of the server too; behind namespaces with its files, and its variables where it
 * asked for replay; a paused session holds no sandbox and says so.
 */
class SessionPauseApiTest extends TwoTierServer.Fixture {
    @Override
    Set<String> tokens() {
        return Set.of();
    }

    @Test
    void aSessionBehindGvisorComesBackWithItsMemoryAndOpenFilesEvenAfterARestart() throws Exception {
        String why = engine.sandbox().host().isolationUnavailable(Isolation.GVISOR);
        Capability.GVISOR.require(why);
        String id = post("/v1/sessions", "{\"language\": \"python\"}").get("id").asString();
        assertThat(cell(id, "x = 41; f = open('notes.txt', 'w'); f.write('one '); f.flush(); x + 1")).isEqualTo("42");
        JsonNode paused = post("/v1/sessions/" + id + "/pause", "{}");
        assertThat(paused.get("state").asString()).isEqualTo("paused");
        assertThat(paused.get("keeps").asString()).isEqualTo("memory");
        JsonNode info = SessionApiTest.json(http.get("/v1/sessions/" + id));
        assertThat(info.get("state").asString()).isEqualTo("paused");
        Path memory = data.resolve("data").resolve("sessions").resolve(id).resolve("memory");
        assertThat(Files.getAttribute(memory, "unix:uid")).as("while paused, the saved sandbox is the server's alone")
                .isEqualTo(0);
        assertThat(Files.getPosixFilePermissions(memory)).hasSize(3); // rwx------

        JsonNode resumed = post("/v1/sessions/" + id + "/resume", "{}");
        assertThat(resumed.get("restored").asString()).isEqualTo("memory");
        assertThat(cell(id, "f.write('two'); f.flush(); x + 2")).as("variables and the open file as they were")
                .isEqualTo("43");
        assertThat(Files.exists(memory)).as("what was saved is used once").isFalse();

        assertThat(post("/v1/sessions/" + id + "/pause", "{}").get("keeps").asString()).isEqualTo("memory");
        stop(); // a paused session outlives the server
        serve();
        assertThat(SessionApiTest.json(http.get("/v1/sessions/" + id)).get("state").asString()).isEqualTo("paused");
        JsonNode after = post("/v1/sessions/" + id + "/execute", "{\"code\": \"f.write(' three'); f.close();"
                + " open('notes.txt').read() + str(x)\"}");
        assertThat(after.get("resumed").asBoolean()).isTrue();
        assertThat(after.get("result").asString()).isEqualTo("'one two three41'");

        assertThat(post("/v1/sessions/" + id + "/pause", "{}").get("keeps").asString()).isEqualTo("memory");
        post("/v1/sessions/" + id + "/restart", "{}");
        assertThat(memory).as("a restart is a fresh interpreter: what a pause saved is dropped").doesNotExist();
        assertThat(cell(id, "'x' in globals()")).isEqualTo("False");
    }

    @Test
    void aSessionBehindNamespacesComesBackWithItsFilesAndReplaysWhenItAskedTo() throws Exception {
        String replay = post("/v1/sessions", "{\"language\": \"javascript\", \"restore\": \"replay\"}").get("id")
                .asString();
        String plain = post("/v1/sessions", "{\"language\": \"javascript\"}").get("id").asString();
        for (String id : new String[] {replay, plain}) {
            assertThat(cell(id, "globalThis.x = 41; require('fs').writeFileSync('kept.txt', 'k'); x + 1"))
                    .isEqualTo("42");
        }
        assertThat(post("/v1/sessions/" + replay + "/pause", "{}").get("keeps").asString()).isEqualTo("replay");
        assertThat(post("/v1/sessions/" + plain + "/pause", "{}").get("keeps").asString()).isEqualTo("files");
        assertThat(post("/v1/sessions/" + plain + "/pause", "{}").get("keeps").asString())
                .as("paused twice is paused").isEqualTo("files");
        JsonNode back = post("/v1/sessions/" + replay + "/resume", "{}");
        assertThat(back.get("restored").asString()).isEqualTo("replay");
        assertThat(back.get("replayed").asInt()).isEqualTo(1);
        assertThat(cell(replay, "x + 1")).isEqualTo("42");
        JsonNode again = post("/v1/sessions/" + plain + "/execute", "{\"code\": \"typeof x + ' '"
                + " + require('fs').readFileSync('kept.txt', 'utf8')\"}");
        assertThat(again.get("resumed").asBoolean()).as("the next call resumes it").isTrue();
        assertThat(again.get("result").asString()).isEqualTo("'undefined k'");
        assertThat(post("/v1/sessions/" + plain + "/resume", "{}").has("restored")).as("a running session is as it"
                + " was").isFalse();
        HttpResponse<String> unknown = http.postJson("/v1/sessions/" + "0".repeat(32) + "/pause", "{}");
        assertThat(unknown.statusCode()).isEqualTo(404);
    }

    @Test
    void aForkIsANewSessionWithItsOwnCopyOfTheFilesAndBehindGvisorOfTheMemory() throws Exception {
        String why = engine.sandbox().host().isolationUnavailable(Isolation.GVISOR);
        Capability.GVISOR.require(why);
        String id = post("/v1/sessions", "{\"language\": \"python\"}").get("id").asString();
        assertThat(cell(id, "x = 41; open('shared.txt', 'w').write('parent'); x + 1")).isEqualTo("42");
        JsonNode forked = post("/v1/sessions/" + id + "/fork", "{\"count\": 2}");
        assertThat(forked.get("keeps").asString()).isEqualTo("memory");
        assertThat(forked.get("forks")).hasSize(2);
        List<String> forks = new ArrayList<>();
        forked.get("forks").forEach(f -> forks.add(f.get("id").asString()));
        assertThat(forks).doesNotContain(id).doesNotHaveDuplicates();
        for (String fork : forks) {
            assertThat(SessionApiTest.json(http.get("/v1/sessions/" + fork)).get("state").asString())
                    .isEqualTo("paused");
            assertThat(cell(fork, "x + 1, open('shared.txt').read()")).as("the parent's memory and files")
                    .isEqualTo("(42, 'parent')");
        }
        assertThat(cell(forks.get(0), "x = 100; open('shared.txt', 'w').write('fork'); x")).isEqualTo("100");
        assertThat(cell(id, "x, open('shared.txt').read()")).as("a fork's changes are its own")
                .isEqualTo("(41, 'parent')");
        assertThat(cell(forks.get(1), "x, open('shared.txt').read()")).isEqualTo("(41, 'parent')");
        Path parentFile = data.resolve("data").resolve("sessions").resolve(id).resolve("workspace").resolve("shared.txt");
        Path forkFile = data.resolve("data").resolve("sessions").resolve(forks.get(0)).resolve("workspace")
                .resolve("shared.txt");
        assertThat(Files.getAttribute(forkFile, "unix:uid")).as("a fork's files are its own uid's")
                .isNotEqualTo(Files.getAttribute(parentFile, "unix:uid"));
        HttpResponse<String> tooMany = http.postJson("/v1/sessions/" + id + "/fork", "{\"count\": 17}");
        assertThat(tooMany.statusCode()).isEqualTo(400);
    }
}
