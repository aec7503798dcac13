package dev.crucible.server.agentsandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * sandboxd's REST filesystem (packages/sandboxd/spec/filesystem/v1/filesystem.yaml) against a real pod: the requests
 * the agent-sandbox SDK's {@code files/filesystem.py} sends ({@code v1/files/} + the path quoted with {@code safe=''},
 * {@code HEAD} for exists, {@code ?recursive=true}), answered from the session's sandbox.
 */
class SandboxdFilesTest {
    private static PodUnderTest pod;

    @BeforeAll
    static void start() throws Exception {
        pod = new PodUnderTest(Map.of());
    }

    @AfterAll
    static void stop() {
        pod.close();
    }

    static JsonNode json(HttpResponse<String> r) {
        return Exchanges.JSON.readTree(r.body());
    }

    @Test
    void putGetHeadAndDeleteAFileOfTheSandbox() throws Exception {
        assertThat(pod.rest("PUT", "/v1/files/workspace%2Fdir%2Fscript.py", "print(1)\n").statusCode()).isEqualTo(204);
        assertThat(json(pod.execute("cat /workspace/dir/script.py")).get("stdout").asString()).isEqualTo("print(1)\n");
        HttpResponse<String> read = pod.rest("GET", "/v1/files/workspace%2Fdir%2Fscript.py", null);
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
        assertThat(read.body()).isEqualTo("print(1)\n");
        assertThat(pod.rest("HEAD", "/v1/files/workspace%2Fdir%2Fscript.py", null).statusCode()).isEqualTo(200);
        assertThat(pod.rest("HEAD", "/v1/files/workspace%2Fabsent.txt", null).statusCode()).isEqualTo(404);
        assertThat(pod.rest("DELETE", "/v1/files/workspace%2Fdir%2Fscript.py", null).statusCode()).isEqualTo(204);
        HttpResponse<String> gone = pod.rest("GET", "/v1/files/workspace%2Fdir%2Fscript.py", null);
        assertThat(gone.statusCode()).isEqualTo(404);
        assertThat(json(gone).get("code").asString()).isEqualTo("NOT_FOUND");
    }

    @Test
    void aDirectoryIsListedWithTheSpecsEntries() throws Exception {
        pod.rest("PUT", "/v1/files/workspace%2Flisted%2Frun.sh?mode=0755", "echo hi\n");
        pod.execute("mkdir -p /workspace/listed/sub");
        JsonNode listing = json(pod.rest("GET", "/v1/files/workspace%2Flisted", null));
        assertThat(listing.get("path").asString()).isEqualTo("/workspace/listed");
        assertThat(listing.get("entries").valueStream().map(e -> e.get("name").asString() + " " + e.get("type")
                .asString())).containsExactlyInAnyOrder("run.sh file", "sub directory");
        JsonNode script = listing.get("entries").valueStream().filter(e -> e.get("name").asString().equals("run.sh"))
                .findFirst().orElseThrow();
        assertThat(script.get("size").asLong()).isEqualTo(8);
        assertThat(script.get("mode").asString()).isEqualTo("0755");
        assertThat(script.get("modified_at").asString()).matches("\\d{4}-\\d\\d-\\d\\dT.*Z");
        assertThat(json(pod.execute("./listed/run.sh")).get("stdout").asString()).isEqualTo("hi\n");
    }

    @Test
    void aFullDirectoryIsRemovedOnlyRecursively() throws Exception {
        pod.rest("PUT", "/v1/files/workspace%2Ffull%2Fa.txt", "a");
        HttpResponse<String> refused = pod.rest("DELETE", "/v1/files/workspace%2Ffull", null);
        assertThat(refused.statusCode()).isEqualTo(409);
        assertThat(json(refused).get("code").asString()).isEqualTo("CONFLICT");
        assertThat(pod.rest("DELETE", "/v1/files/workspace%2Ffull?recursive=true", null).statusCode()).isEqualTo(204);
        assertThat(pod.rest("HEAD", "/v1/files/workspace%2Ffull", null).statusCode()).isEqualTo(404);
    }

    @Test
    void aPathOutOfTheSandboxRootIsForbiddenAndBadInputIsAFourHundred() throws Exception {
        HttpResponse<String> out = pod.rest("GET", "/v1/files/..%2F..%2Fetc%2Fpasswd", null);
        assertThat(out.statusCode()).isEqualTo(403);
        assertThat(json(out).get("code").asString()).isEqualTo("PERMISSION_DENIED");
        assertThat(pod.rest("PUT", "/v1/files/workspace%2Fx?mode=999", "x").statusCode()).isEqualTo(400);
        assertThat(pod.rest("POST", "/v1/files/workspace%2Fx", "x").statusCode()).isEqualTo(405);
        assertThat(pod.rest("GET", "/v1/nothing", null).statusCode()).isEqualTo(404);
    }

    @Test
    void healthAndMetadata() throws Exception {
        JsonNode health = json(pod.rest("GET", "/v1/health", null));
        assertThat(health.get("status").asString()).isEqualTo("ok");
        assertThat(health.get("uptime_seconds").isIntegralNumber()).isTrue();
        JsonNode env = json(pod.rest("GET", "/v1/metadata", null)).get("env");
        assertThat(env.get("SANDBOX_BASE_DIR").asString()).isEqualTo("/workspace");
        assertThat(env.propertyNames()).allSatisfy(name -> assertThat(name).startsWith("SANDBOX"));
    }
}
