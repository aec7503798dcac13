package dev.crucible.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** A request's limits are checked by name against the allowed range. */
class LimitsTest {

    @Test
    void limitsRefuseValuesOutOfRangeByName() {
        assertThat(Limits.DEFAULT.with(2000L, null, 64, null, null))
                .isEqualTo(new Limits(2000, 2000, 64, Limits.DEFAULT.outputBytes(), Limits.DEFAULT.pids()));
        assertThatThrownBy(() -> Limits.DEFAULT.with(0L, null, null, null, null)).hasMessageContaining("timeout_ms");
        assertThatThrownBy(() -> Limits.DEFAULT.with(null, null, null, null, 1_000_000)).hasMessageContaining("pids");
        assertThatThrownBy(() -> Limits.DEFAULT.with(null, null, 8, null, null)).hasMessageContaining("memory_mb");
    }
}
