package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Crucible's own API refuses what it does not know (design.md, "strict input"): an unknown field, at any depth, is a
 * 400 {@code invalid_request} naming it and the nearest known name; a value an enumerated field does not take names
 * the ones it does. The compatible APIs stay as lenient as the originals they mimic.
 */
class StrictInputTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));

    static JsonNode refused(HttpResponse<String> response) {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
        JsonNode error = JSON.readTree(response.body()).get("error");
        assertThat(error.get("code").asString()).isEqualTo("invalid_request");
        return error;
    }

    static String message(String path, String body) throws Exception {
        return refused(SERVER.http().postJson(path, body)).get("message").asString();
    }

    @Test
    void anUnknownTopLevelFieldIsRefusedWithTheNearestKnownName() throws Exception {
        assertThat(message("/v1/execute", "{\"language\": \"python\", \"code\": \"print(1)\", \"timeout\": 5}"))
                .isEqualTo("unknown field `timeout`; did you mean `limits.timeout_ms`?");
        assertThat(message("/v1/execute", "{\"language\": \"python\", \"code\": \"1\", \"isolaton\": \"gvisor\"}"))
                .isEqualTo("unknown field `isolaton`; did you mean `isolation`?");
        assertThat(message("/v1/evaluate", "{\"language\": \"python\", \"code\": \"1\", \"testcases\": [],"
                + " \"tset_cases\": []}")).contains("unknown field `tset_cases`");
    }

    @Test
    void anUnknownNestedFieldIsRefusedByItsPath() throws Exception {
        assertThat(message("/v1/execute", "{\"language\": \"python\", \"code\": \"1\", \"limits\": {\"timout_ms\": 1}}"))
                .isEqualTo("unknown field `limits.timout_ms`; did you mean `limits.timeout_ms`?");
        assertThat(message("/v1/execute", "{\"language\": \"python\", \"code\": \"1\","
                + " \"files\": [{\"path\": \"a\", \"content\": \"b\", \"encodng\": \"utf8\"}]}"))
                .isEqualTo("unknown field `files[0].encodng`; did you mean `files[0].encoding`?");
    }

    @Test
    void aFieldFarFromEveryKnownOneIsRefusedWithTheFieldsThere() throws Exception {
        assertThat(message("/v1/sessions", "{\"zzzzzz\": 1}")).startsWith("unknown field `zzzzzz`; the fields here are ")
                .contains("language", "on_idle", "restore");
    }

    @Test
    void aCommandsMisspeltUserIsRefusedSuggestingUser() throws Exception {
        HttpResponse<String> created = SERVER.http().postJson("/v1/sessions", "{\"language\": \"bash\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).get("id").asString();
        try {
            assertThat(message("/v1/sessions/" + id + "/commands", "{\"command\": \"id -u\", \"usr\": \"root\"}"))
                    .isEqualTo("unknown field `usr`; did you mean `user`?");
            assertThat(message("/v1/sessions/" + id + "/execute", "{\"code\": \"echo 1\", \"timeout\": 5}"))
                    .isEqualTo("unknown field `timeout`; did you mean `timeout_ms`?");
            assertThat(message("/v1/sessions/" + id + "/commands", "{\"command\": \"id -u\", \"user\": \"admin\"}"))
                    .isEqualTo("`user` is one of `user`, `root`, not `admin`");
        } finally {
            SERVER.http().delete("/v1/sessions/" + id);
        }
    }

    @Test
    void anUnknownEnumValueIsRefusedNamingTheAllowedOnes() throws Exception {
        assertThat(message("/v1/sessions", "{\"restore\": \"everything\"}"))
                .isEqualTo("`restore` is one of `none`, `replay`, not `everything`");
        assertThat(message("/v1/sessions", "{\"on_idle\": 1}")).startsWith("`on_idle` is one of `delete`, `pause`");
        assertThat(message("/v1/execute", "{\"language\": \"python\", \"code\": \"1\", \"isolation\": \"firecracker\"}"))
                .startsWith("`isolation` is one of `namespaces`, `gvisor`");
    }

    @Test
    void theWireNamesOfEnumeratedFieldsStillWork() throws Exception {
        HttpResponse<String> ok = SERVER.http().postJson("/v1/execute", "{\"language\": \"python\", \"code\":"
                + " \"print(open('b').read())\", \"isolation\": \"namespaces\","
                + " \"files\": [{\"path\": \"b\", \"content\": \"aGk=\", \"encoding\": \"BASE64\"}]}");
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        assertThat(JSON.readTree(ok.body()).get("stdout").asString()).isEqualTo("hi\n");
    }

    @Test
    void theCompatibleApisStillTakeFieldsTheyDoNotKnow() throws Exception {
        HttpResponse<String> piston = SERVER.http().send(HttpRequest.newBuilder(
                URI.create(SERVER.http().base() + "/api/v2/execute")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"language\": \"python\", \"version\": \"*\","
                        + " \"files\": [{\"content\": \"print(2)\", \"mtime\": 0}], \"compile_memory_limit\": -1,"
                        + " \"not_a_piston_field\": true}")));
        assertThat(piston.statusCode()).as(piston.body()).isEqualTo(200);
        assertThat(JSON.readTree(piston.body()).get("run").get("stdout").asString()).isEqualTo("2\n");
        HttpResponse<String> fusion = SERVER.http().postJson("/run_code",
                "{\"code\": \"print(3)\", \"language\": \"python\", \"extra_field\": {\"x\": 1}}");
        assertThat(fusion.statusCode()).as(fusion.body()).isEqualTo(200);
        assertThat(JSON.readTree(fusion.body()).get("run_result").get("stdout").asString()).isEqualTo("3\n");
    }
}
