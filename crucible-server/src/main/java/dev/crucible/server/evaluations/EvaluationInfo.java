package dev.crucible.server.evaluations;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.eval.dataset.DatasetRun;
import java.time.Instant;
import java.util.List;

/**
 * An evaluation run as the API shows it. {@code state}: {@code running}, {@code done} (its summary is the results
 * file's last line), {@code failed} ({@code error} says why), or {@code stopped} (the server stopped during it, or it
 * was stopped: the results judged so far are kept). {@code done} and {@code passed} count the samples judged so far.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record EvaluationInfo(
        @JsonProperty("id") String id,
        @JsonProperty("format") String format,
        @JsonProperty("state") String state,
        @JsonProperty("total") int total,
        @JsonProperty("done") int done,
        @JsonProperty("passed") int passed,
        @JsonProperty("k") List<Integer> k,
        @JsonProperty("created_at") Instant createdAt,
        @JsonProperty("finished_at") Instant finishedAt,
        @JsonProperty("summary") DatasetRun.Summary summary,
        @JsonProperty("error") String error) {

    EvaluationInfo progressed(int doneNow, int passedNow) {
        return new EvaluationInfo(id, format, state, total, doneNow, passedNow, k, createdAt, finishedAt, summary,
                error);
    }

    EvaluationInfo ended(String endState, Instant at, DatasetRun.Summary finalSummary, String why) {
        return new EvaluationInfo(id, format, endState, total, done, passed, k, createdAt, at, finalSummary, why);
    }
}
