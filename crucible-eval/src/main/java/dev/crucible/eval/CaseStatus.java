package dev.crucible.eval;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import dev.crucible.sandbox.Verdict;
import java.util.Locale;

/**
 * How a judged case ended ({@link Judge.CaseResult}), and so how a dataset's sample ended (its first failing case's,
 * or its one run's). {@link #wireName()} is its {@code status} on the wire and in results files; {@link #fromWire}
 * reads every name ever written back. The first seven are the run's {@link Verdict}; the last two are the judge's
 * word for a case that did not run.
 */
public enum CaseStatus {
    OK,
    RUNTIME_ERROR,
    TIMEOUT,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    COMPILE_ERROR,
    SANDBOX_ERROR,
    /** Not run: an earlier case failed and the request did not ask for {@code run_all_cases}. */
    SKIPPED,
    /**
     * Not run: the request for it was refused (a dataset's sample whose program cannot be judged: unknown language,
     * test code that cannot be sealed). The judge itself never gives it to a case: a request it cannot use is refused
     * whole.
     */
    INVALID;

    /** The snake_case name used on the wire, e.g. {@code runtime_error}. */
    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The status a wire name names (a results file written by any version, a remote Crucible's answer).
     *
     * @throws IllegalArgumentException for a name no Crucible writes
     */
    @JsonCreator
    public static CaseStatus fromWire(String wire) {
        for (CaseStatus s : values()) {
            if (s.wireName().equals(wire)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown status '" + wire + "'");
    }

    /** The status of a case that ran: its run's verdict. */
    public static CaseStatus of(Verdict verdict) {
        return switch (verdict) {
            case OK -> OK;
            case RUNTIME_ERROR -> RUNTIME_ERROR;
            case TIMEOUT -> TIMEOUT;
            case MEMORY_LIMIT -> MEMORY_LIMIT;
            case OUTPUT_LIMIT -> OUTPUT_LIMIT;
            case COMPILE_ERROR -> COMPILE_ERROR;
            case SANDBOX_ERROR -> SANDBOX_ERROR;
        };
    }
}
