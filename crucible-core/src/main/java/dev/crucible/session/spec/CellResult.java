package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;

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

    /**
     * The cell an agent's answer frame describes ({@code status}, {@code stdout}, {@code stderr}, {@code result},
     * {@code display}, {@code error}, {@code execution_count}); {@code byTimeout} when it answered only after the
     * timeout's interrupt, which makes an interrupted, finished or failed cell a {@code timeout}.
     */
    public static CellResult fromAnswer(JsonNode a, boolean byTimeout, long timeout, long wallMs,
            boolean restarted, boolean resumed, Integer replayed) {
        CellStatus status = CellStatus.fromAgent(a.path("status").asString(""));
        CellError error = null;
        if (a.hasNonNull("error")) {
            JsonNode e = a.get("error");
            error = new CellError(e.path("name").asString(""), e.path("message").asString(""),
                    e.path("traceback").asString(""));
        }
        if (byTimeout && (status == CellStatus.INTERRUPTED || status == CellStatus.OK || status == CellStatus.RUNTIME_ERROR)) {
            status = CellStatus.TIMEOUT;
            String why = "the cell ran past its " + timeout + " ms and was interrupted; the session and its variables"
                    + " are kept";
            error = error == null ? new CellError("TimeoutError", why, "")
                    : new CellError(error.name(), why, error.traceback());
        }
        List<Display> display = null;
        if (a.hasNonNull("display")) {
            display = new ArrayList<>();
            for (JsonNode d : a.get("display")) {
                display.add(new Display(d.path("mime").asString(""), d.path("data").asString("")));
            }
        }
        return new CellResult(status, a.path("stdout").asString(""), a.path("stderr").asString(""),
                a.path("stdout_truncated").asBoolean(false), a.path("stderr_truncated").asBoolean(false),
                a.hasNonNull("result") ? a.get("result").asString() : null, display, error,
                a.path("execution_count").asInt(0), wallMs, restarted, resumed, replayed);
    }
}
