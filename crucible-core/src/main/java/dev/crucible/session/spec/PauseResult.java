package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * What {@code POST /v1/sessions/{id}/pause} and {@code …/resume} answer (issue 30).
 *
 * @param state {@code paused}, or {@code running} after a resume
 * @param keeps after a pause, what a resume will bring back: {@code memory} (behind gVisor: memory, variables,
 *     processes and open files as they were), {@code replay} (the files, and the variables rebuilt by replaying the
 *     logged cells: a session made with {@code restore: "replay"}) or {@code files} (the files only)
 * @param restored after a resume, what came back (the same words); null when the session was not paused
 * @param replayed after a resume by replay, how many logged cells ran ok
 * @param tookMs how long the pause or the resume took
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PauseResult(
        @JsonProperty("id") String id,
        @JsonProperty("state") String state,
        @JsonProperty("keeps") String keeps,
        @JsonProperty("restored") String restored,
        @JsonProperty("replayed") Integer replayed,
        @JsonProperty("took_ms") long tookMs) {}
