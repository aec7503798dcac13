package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** How a cell ended; {@link #wireName()} is its {@code status} on the wire. */
public enum CellStatus {
    OK,
    /** More input is needed: the code is not a complete statement. */
    INCOMPLETE,
    COMPILE_ERROR,
    /** An exception, or the interpreter died. */
    RUNTIME_ERROR,
    /** Stopped by an interrupt request. */
    INTERRUPTED,
    TIMEOUT,
    MEMORY_LIMIT,
    SANDBOX_ERROR;

    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The status an agent answered; anything it may not answer is {@link #SANDBOX_ERROR}. */
    public static CellStatus fromAgent(String wire) {
        for (CellStatus s : values()) {
            if (s.wireName().equals(wire)) {
                return s;
            }
        }
        return SANDBOX_ERROR;
    }
}
