package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** What becomes of a session idle past its timeout ({@code on_idle}); {@link #wireName()} on the wire. */
public enum IdleAction {
    /** Deleted, its files with it (the default). */
    DELETE,
    /** Paused: its sandbox released, its files (and behind gVisor its memory) kept for the next call. */
    PAUSE;

    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
