package dev.crucible.session;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A session as the API shows it.
 *
 * @param state {@code running} (an interpreter is up) or {@code dormant} (none yet since a restart or a crash; the
 *     next cell starts one)
 * @param expiresAt when the session is removed if unused: the idle timeout from its last use, capped by its lifetime
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
        @JsonProperty("limits") SessionLimits limits) {}
