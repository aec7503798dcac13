package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.EgressReport;
import dev.crucible.session.process.ProcessInfo;
import java.util.List;

/**
 * A session as the API shows it.
 *
 * @param state {@code running} (an interpreter is up) or {@code dormant} (none yet since a restart or a crash; the
 *     next cell starts one)
 * @param image the image the session runs in as it was asked for, or null on the host's file system
 * @param imageDigest that image's digest, which the session keeps across restarts
 * @param network the session's egress: its allowlist now (empty once locked) and the connections its proxy judged
 *     since the server started it; null for a session without network
 * @param expiresAt when the session is removed if unused: the idle timeout from its last use (a running background
 *     process is use), capped by its lifetime
 * @param processes its background processes, running and ended, oldest first (none while its sandbox is not running)
 * @param ports the TCP ports something listens on in its sandbox now, each with the path that proxies to it (in one
 *     session's own answer, {@code GET /v1/sessions/{id}}; absent from lists and other answers)
 * @param restored in the answer that made it from a snapshot only: what came back ({@code memory}, {@code replay} or
 *     {@code files})
 * @param isolation the tier its sandboxes run behind, {@code namespaces} or {@code gvisor} (docs/isolation.md): the one
 *     it was made behind, kept by its forks, resumes and snapshots; null for a session recorded before sessions had one
 */
public record SessionInfo(
        @JsonProperty("id") String id,
        @JsonProperty("language") String language,
        @JsonProperty("created_at") String createdAt,
        @JsonProperty("expires_at") String expiresAt,
        @JsonProperty("last_used_at") String lastUsedAt,
        @JsonProperty("idle_timeout_s") long idleTimeoutS,
        @JsonProperty("restore") String restore,
        @JsonProperty("state") String state,
        @JsonProperty("limits") SessionLimits limits,
        @JsonProperty("image") String image,
        @JsonProperty("image_digest") String imageDigest,
        @JsonProperty("network") EgressReport network,
        @JsonProperty("processes") List<ProcessInfo> processes,
        @JsonProperty("ports") List<PortInfo> ports,
        @JsonProperty("on_idle") String onIdle,
        @JsonInclude(JsonInclude.Include.NON_NULL)
        @JsonProperty("restored") String restored,
        @JsonProperty("isolation") String isolation) {

    /** This answer saying what a session made from a snapshot came back with. */
    public SessionInfo withRestored(String how) {
        return new SessionInfo(id, language, createdAt, expiresAt, lastUsedAt, idleTimeoutS, restore, state, limits,
                image, imageDigest, network, processes, ports, onIdle, how, isolation);
    }
}
