package dev.crucible.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

class JsonObjectTest {
    @Test
    void anAnswerPrintsItsFieldsInTheOrderWritten() {
        assertThat(JsonMapper.builder().build().writeValueAsString(
                JsonObject.of("pid", 9, "signalled", true, "b", null, "a", "x", "processes", List.of())))
                .isEqualTo("{\"pid\":9,\"signalled\":true,\"b\":null,\"a\":\"x\",\"processes\":[]}");
    }

    @Test
    void aFieldTwiceOrANameWithoutItsValueIsAMistake() {
        assertThatThrownBy(() -> JsonObject.of("a", 1, "a", 2)).hasMessageContaining("a field twice: a");
        assertThatThrownBy(() -> JsonObject.of("a", 1, "b")).isInstanceOf(IllegalArgumentException.class);
    }
}
