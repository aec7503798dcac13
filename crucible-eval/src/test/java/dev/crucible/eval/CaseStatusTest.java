package dev.crucible.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.sandbox.Verdict;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** A case's status is written as the string it was before it was typed, and every such string reads back. */
class CaseStatusTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    /** Every status ever written, as written. */
    static final List<String> WIRE = List.of("ok", "runtime_error", "timeout", "memory_limit", "output_limit",
            "compile_error", "sandbox_error", "skipped", "invalid");

    @Test
    void everyStatusIsWrittenByItsWireNameAndReadBack() {
        assertThat(Arrays.stream(CaseStatus.values()).map(CaseStatus::wireName)).containsExactlyElementsOf(WIRE);
        for (String wire : WIRE) {
            String json = "{\"passed\":false,\"status\":\"" + wire + "\",\"score\":0.5,\"reason\":\"r\",\"stdout\":\"o\","
                    + "\"stderr\":\"e\",\"exit_code\":1,\"wall_ms\":7}";
            Judge.CaseResult read = JSON.readValue(json, Judge.CaseResult.class);
            assertThat(read.status()).isEqualTo(CaseStatus.fromWire(wire));
            assertThat(JSON.writeValueAsString(read)).isEqualTo(json);
        }
        assertThat(JSON.writeValueAsString(Judge.CaseResult.skipped()))
                .isEqualTo("{\"passed\":false,\"status\":\"skipped\",\"score\":0.0,\"reason\":\"an earlier case failed\","
                        + "\"wall_ms\":0}");
    }

    @Test
    void aCaseThatRanHasItsVerdictsName() {
        for (Verdict v : Verdict.values()) {
            assertThat(CaseStatus.of(v).wireName()).isEqualTo(v.wireName());
        }
    }

    @Test
    void aNameNoCrucibleWritesIsRefused() {
        for (String bad : List.of("OK", "passed", "failed", "")) {
            assertThatThrownBy(() -> CaseStatus.fromWire(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("unknown status");
        }
    }
}
