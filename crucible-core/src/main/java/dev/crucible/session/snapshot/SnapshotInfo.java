package dev.crucible.session.snapshot;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A snapshot as the API shows it ({@code POST /v1/sessions/{id}/snapshots}, {@code GET /v1/snapshots}).
 *
 * @param sessionId the session it was taken of (which may be gone since)
 * @param image the image that session ran in, or null on the host's file system
 * @param keeps what a session made from it comes back with: {@code memory} (behind gVisor: memory, variables,
 *     processes and open files), {@code replay} (files, and the cells replayed) or {@code files}
 * @param bytes what it holds on disk (counted against the sessions' disk budget)
 * @param tookMs how long taking it took (only in the answer that took it)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record SnapshotInfo(
        @JsonProperty("name") String name,
        @JsonProperty("session_id") String sessionId,
        @JsonProperty("language") String language,
        @JsonProperty("image") String image,
        @JsonProperty("keeps") String keeps,
        @JsonProperty("bytes") long bytes,
        @JsonProperty("created_at") String createdAt,
        @JsonProperty("took_ms") Long tookMs) {

    /** This answer with how long taking it took. */
    public SnapshotInfo took(long ms) {
        return new SnapshotInfo(name, sessionId, language, image, keeps, bytes, createdAt, ms);
    }
}
