package dev.crucible.health;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/**
 * How one part of the server is doing, as {@code /readyz} and the metrics report it. A replica is ready while no part is
 * {@link #DOWN}; a {@link #DEGRADED} part still serves (a zygote being replaced while its runs are spawned).
 */
public enum PartState {
    /** Working as designed. */
    OK,
    /** Serving, but on a fallback or with less capacity (a part being replaced, some slots stuck). */
    DEGRADED,
    /** Cannot serve: the replica should get no traffic until it recovers. */
    DOWN;

    /** The snake_case name used on the wire, e.g. {@code degraded}. */
    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The worse of the two. */
    public PartState worst(PartState other) {
        return other.ordinal() > ordinal() ? other : this;
    }

    /** As a gauge: 0 ok, 1 degraded, 2 down. */
    public int level() {
        return ordinal();
    }
}
