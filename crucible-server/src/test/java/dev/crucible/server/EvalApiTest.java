package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** /v1/evaluate and /v1/reward over HTTP against the real SERVER.server(). */
class EvalApiTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    @RegisterExtension
    static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    @Test
    void evaluateJudgesEveryCase() throws Exception {
        HttpResponse<String> r = SERVER.http().postJson("/v1/evaluate", """
                {"language": "python", "code": "a, b = map(int, input().split())\\nprint(a + b)",
                 "testcases": [{"stdin": "1 2", "expect": "3"}, {"stdin": "2 2", "expect": "5"}, {"stdin": "0 0", "expect": "0"}],
                 "run_all_cases": true}""");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode body = json(r);
        assertThat(body.get("passed").asInt()).isEqualTo(2);
        assertThat(body.get("total").asInt()).isEqualTo(3);
        assertThat(body.get("results").get(1).get("passed").asBoolean()).isFalse();
        assertThat(json(SERVER.http().postJson("/v1/evaluate", "{\"language\": \"python\", \"code\": \"1\", \"testcases\": []}"))
                .get("error").get("code").asString()).isEqualTo("invalid_request");
        assertThat(SERVER.http().postJson("/v1/evaluate", "{\"language\": \"cobol\", \"code\": \"1\", \"testcases\": [{}]}")
                .statusCode()).isEqualTo(400);
        assertThat(SERVER.http().postJson("/v1/evaluate", "{\"language\": ").statusCode()).isEqualTo(400);
    }

    @Test
    void rewardScoresOneAndMany() throws Exception {
        String item = """
                {"messages": [{"role": "user", "content": "Print 6*7. Expected output: 42"},
                              {"role": "assistant", "content": "```python\\nprint(6 * 7)\\n```"}]}""";
        JsonNode one = json(SERVER.http().postJson("/v1/reward", item));
        assertThat(one.get("score").asDouble()).isEqualTo(1.0);
        assertThat(one.get("metrics").get("output_match").get("score").asDouble()).isEqualTo(1.0);
        JsonNode batch = json(SERVER.http().postJson("/v1/reward/batch", "{\"items\": [" + item + ", "
                + item.replace("6 * 7", "6 * 8") + "]}"));
        assertThat(batch.get("results").size()).isEqualTo(2);
        assertThat(batch.get("results").get(1).get("score").asDouble()).isLessThan(1.0);
        assertThat(batch.get("mean_score").asDouble()).isBetween(0.5, 1.0);
        assertThat(SERVER.http().postJson("/v1/reward", "{\"messages\": []}").statusCode()).isEqualTo(400);
        assertThat(SERVER.http().postJson("/v1/reward/batch", "{\"items\": []}").statusCode()).isEqualTo(400);
    }
}
