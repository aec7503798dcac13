package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** How a cell's code is run ({@code mode} of {@code POST /v1/sessions/{id}/execute}); {@link #wireName()} on the wire. */
public enum CellMode {
    /** Every statement run, the last expression's value shown, as Jupyter does (the default). */
    AUTO,
    /** A script: nothing shown. */
    EXEC,
    /** One statement, its value echoed, as Python's interactive prompt. */
    SINGLE;

    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
