package dev.crucible.client;

/** A session as the server describes it ({@code POST /v1/sessions}, {@code GET /v1/sessions/{id}}). */
public record SessionInfo(String id, String language, String createdAt, String expiresAt, String lastUsedAt,
        Long idleTimeoutS, String restore, String state) {}
