package dev.crucible.sandbox;

import java.util.Locale;

/** How a run ended; {@link #wireName()} is the {@code status} of the HTTP API. */
public enum Verdict {
    OK,
    RUNTIME_ERROR,
    TIMEOUT,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    COMPILE_ERROR,
    SANDBOX_ERROR;

    /** The snake_case name used on the wire, e.g. {@code memory_limit}. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
