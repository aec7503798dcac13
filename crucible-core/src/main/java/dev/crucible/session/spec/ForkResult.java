package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * What {@code POST /v1/sessions/{id}/fork} answers (issue 30): the new sessions, each paused with its own copy of the
 * parent's files and, behind gVisor, of its memory; their first call brings them up.
 *
 * @param id the parent, paused by the fork (its next call resumes it)
 * @param keeps what each fork (and the parent) comes back with: {@code memory}, {@code replay} or {@code files}
 */
public record ForkResult(
        @JsonProperty("id") String id,
        @JsonProperty("forks") List<SessionInfo> forks,
        @JsonProperty("keeps") String keeps,
        @JsonProperty("took_ms") long tookMs) {}
