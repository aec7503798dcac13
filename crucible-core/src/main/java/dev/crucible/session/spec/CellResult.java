package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * The answer to one cell.
 *
 * @param status {@code ok}, {@code incomplete} (more input needed), {@code compile_error}, {@code runtime_error}
 *     (an exception, or the interpreter died), {@code interrupted} (by an interrupt request), {@code timeout},
 *     {@code memory_limit}, {@code sandbox_error}
 * @param result the repr of the value the cell showed ({@code single}/{@code auto}), or null
 * @param display rich outputs (e.g. a matplotlib figure as image/png, base64), or null
 * @param error the exception with its traceback (ANSI stripped), or null
 * @param executionCount the cell's number in this interpreter
 * @param restarted the interpreter was restarted: before this cell (the previous one killed it) or after it
 *     (it did not stop when interrupted); variables are gone
 * @param resumed this cell started a fresh interpreter for a session kept over a server restart
 * @param replayed how many earlier cells were replayed to rebuild the variables (restore "replay"), or null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record CellResult(
        @JsonProperty("status") CellStatus status,
        @JsonProperty("stdout") String stdout,
        @JsonProperty("stderr") String stderr,
        @JsonProperty("stdout_truncated") boolean stdoutTruncated,
        @JsonProperty("stderr_truncated") boolean stderrTruncated,
        @JsonProperty("result") String result,
        @JsonProperty("display") List<Display> display,
        @JsonProperty("error") CellError error,
        @JsonProperty("execution_count") int executionCount,
        @JsonProperty("wall_ms") long wallMs,
        @JsonProperty("restarted") boolean restarted,
        @JsonProperty("resumed") boolean resumed,
        @JsonProperty("replayed") Integer replayed) {

    /** One rich output: a MIME type and its data (base64 for binary types). */
    public record Display(@JsonProperty("mime") String mime, @JsonProperty("data") String data) {}

    /** An exception raised by a cell, or what happened to the interpreter. */
    public record CellError(
            @JsonProperty("name") String name,
            @JsonProperty("message") String message,
            @JsonProperty("traceback") String traceback) {}
}
