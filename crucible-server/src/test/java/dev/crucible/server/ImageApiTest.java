package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.client.CrucibleClient;
import dev.crucible.client.ExecuteRequest;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.TestImages;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.server.http.RuntimeInfo;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Requests that name an image, over HTTP against the real server: execute, evaluate and sessions run in it and say
 * which digest they ran on; an image the server does not have is a 422 naming the pull command, never a download.
 */
class ImageApiTest {
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));
    static final JsonMapper JSON = JsonMapper.builder().build();
    static Image image;

    @BeforeAll
    static void commitTheImage() throws Exception {
        image = TestImages.debianPython(TestHost.images());
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return JSON.readTree(r.body());
    }

    private static String body(Map<String, Object> fields) {
        return JSON.writeValueAsString(fields);
    }

    @Test
    void executeRunsInTheNamedImageAndAnswersItsDigest() throws Exception {
        JsonNode r = ok(SERVER.http().postJson("/v1/execute", body(Map.of("language", "python", "image",
                TestImages.DEBIAN_PYTHON, "code", "import tabulate; print(tabulate.__name__)"))), 200);
        assertThat(r.get("status").asString()).as(r.toString()).isEqualTo("ok");
        assertThat(r.get("stdout").asString()).isEqualTo("tabulate\n");
        assertThat(r.get("image_digest").asString()).isEqualTo(image.digest());
        JsonNode host = ok(SERVER.http().postJson("/v1/execute", body(Map.of("language", "python", "code", "print(1)"))), 200);
        assertThat(host.has("image_digest")).as("a run on the host names no image").isFalse();
    }

    @Test
    void theJavaClientNamesAnImageAndReadsTheDigest() throws Exception {
        var client = CrucibleClient.create(
                URI.create("http://127.0.0.1:" + SERVER.server().port()), null);
        var r = client.execute(ExecuteRequest.of("python", "import tabulate; print('sdk')")
                .withImage(TestImages.DEBIAN_PYTHON));
        assertThat(r.stdout()).as(r.stderr()).isEqualTo("sdk\n");
        assertThat(r.imageDigest()).isEqualTo(image.digest());
    }

    @Test
    void aRuntimeInAnImageIsListedWithTheImageAndItsDigest(@TempDir Path dir)
            throws Exception {
        Path toml = dir.resolve("runtimes.toml");
        Files.writeString(toml, "[[runtime]]\nlanguage = \"py-debian\"\nfile_name = \"main.py\"\n"
                + "run_command = [\"python3\", \"{file}\"]\nimage = \"" + TestImages.DEBIAN_PYTHON + "\"\n");
        var registry = RuntimeRegistry.load(toml, TestHost.crucible().runtimes().images());
        JsonNode listed = JSON.valueToTree(RuntimeInfo.of(registry.find("py-debian").orElseThrow()));
        assertThat(listed.get("available").asBoolean()).as(listed.toString()).isTrue();
        assertThat(listed.get("image").asString()).isEqualTo(TestImages.DEBIAN_PYTHON);
        assertThat(listed.get("image_digest").asString()).isEqualTo(image.digest());
        JsonNode host = JSON.valueToTree(RuntimeInfo.of(registry.find("python").orElseThrow()));
        assertThat(host.has("image")).isFalse();
    }

    @Test
    void anUnknownImageIs422ImageNotFoundNamingThePullCommand() throws Exception {
        JsonNode r = ok(SERVER.http().postJson("/v1/execute", body(Map.of("language", "python", "image",
                "ghcr.io/nobody/nothing:1", "code", "print(1)"))), 422);
        assertThat(r.at("/error/code").asString()).isEqualTo("image_not_found");
        assertThat(r.at("/error/message").asString()).contains("crucible image pull ghcr.io/nobody/nothing:1");
        JsonNode bad = ok(SERVER.http().postJson("/v1/execute", body(Map.of("language", "python", "image",
                "UPPER CASE", "code", "print(1)"))), 400);
        assertThat(bad.at("/error/code").asString()).isEqualTo("invalid_request");
        JsonNode session = ok(SERVER.http().postJson("/v1/sessions", body(Map.of("image", "crucible.test/none:1"))), 422);
        assertThat(session.at("/error/code").asString()).isEqualTo("image_not_found");
    }

    @Test
    void evaluateJudgesInTheImage() throws Exception {
        JsonNode r = ok(SERVER.http().postJson("/v1/evaluate", body(Map.of("language", "python", "image",
                image.digest(), "code", "import tabulate\nprint(input().upper())",
                "testcases", List.of(Map.of("stdin", "abc", "expect", "ABC"))))), 200);
        assertThat(r.get("passed").asInt()).as(r.toString()).isEqualTo(1);
        assertThat(r.get("image_digest").asString()).isEqualTo(image.digest());
    }

    @Test
    void aSessionRunsInTheImageKeepsItsStateAndShowsTheDigest() throws Exception {
        JsonNode created = ok(SERVER.http().postJson("/v1/sessions", body(Map.of("image", TestImages.DEBIAN_PYTHON))), 201);
        String id = created.get("id").asString();
        try {
            assertThat(created.get("image").asString()).isEqualTo(TestImages.DEBIAN_PYTHON);
            assertThat(created.get("image_digest").asString()).isEqualTo(image.digest());
            JsonNode first = ok(SERVER.http().postJson("/v1/sessions/" + id + "/execute",
                    body(Map.of("code", "import tabulate, os\nrows = [[1, 2]]\nopen('kept.txt', 'w').write('k')"))), 200);
            assertThat(first.get("status").asString()).as(first.toString()).isEqualTo("ok");
            JsonNode second = ok(SERVER.http().postJson("/v1/sessions/" + id + "/execute",
                    body(Map.of("code", "print(tabulate.tabulate(rows, tablefmt='plain'), open('kept.txt').read())"))),
                    200);
            assertThat(second.get("stdout").asString()).isEqualTo("1  2 k\n");
            JsonNode info = ok(SERVER.http().get("/v1/sessions/" + id), 200);
            assertThat(info.get("image_digest").asString()).isEqualTo(image.digest());
        } finally {
            SERVER.http().delete("/v1/sessions/" + id);
        }
    }
}
