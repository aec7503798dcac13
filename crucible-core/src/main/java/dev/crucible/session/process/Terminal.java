package dev.crucible.session.process;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A terminal's size, in character cells: a background command started with one runs on a PTY of its sandbox (its
 * stdin, stdout and stderr all on it, its output as stdout).
 */
public record Terminal(@JsonProperty("rows") int rows, @JsonProperty("cols") int cols) {
    /** The largest side a terminal may have. */
    public static final int MAX = 1000;

    /** Whether both sides are from 1 to {@link #MAX}. */
    public boolean valid() {
        return rows >= 1 && rows <= MAX && cols >= 1 && cols <= MAX;
    }
}
