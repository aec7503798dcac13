package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** What a session brings back after its interpreter is lost ({@code restore}); {@link #wireName()} on the wire. */
public enum RestoreMode {
    /** Its files only (the default). */
    NONE,
    /** Its files, and its logged cells run again. */
    REPLAY;

    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
