package dev.crucible.sandbox;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** How a run ended; {@link #wireName()} is the {@code status} of the HTTP API, and how it is written in JSON. */
public enum Verdict {
    OK,
    RUNTIME_ERROR,
    TIMEOUT,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    COMPILE_ERROR,
    SANDBOX_ERROR;

    /** The snake_case name used on the wire, e.g. {@code memory_limit}. */
    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
