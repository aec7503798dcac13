package dev.crucible.client;

/**
 * A session as the server describes it ({@code POST /v1/sessions}, {@code GET /v1/sessions/{id}}); {@code isolation}
 * is the tier its sandboxes run behind ({@code namespaces} or {@code gvisor}; {@code createSession(Map.of("isolation",
 * "gvisor"))} asks for one), null from a server that does not say.
 */
public record SessionInfo(String id, String language, String createdAt, String expiresAt, String lastUsedAt,
        Long idleTimeoutS, String restore, String state, String isolation) {

    /**
     * What pausing or resuming a session answers ({@link CrucibleClient#pause}, {@link CrucibleClient#resume}).
     *
     * @param state {@code paused}, or {@code running} after a resume
     * @param keeps after a pause, what a resume brings back: {@code memory} (behind gVisor), {@code replay} or
     *     {@code files}
     * @param restored after a resume, what came back (the same words); null when the session was not paused
     * @param replayed after a resume by replay, how many logged cells ran ok
     */
    public record Pause(String id, String state, String keeps, String restored, Integer replayed, long tookMs) {}

    /**
     * A snapshot ({@link CrucibleClient#snapshot}, {@link CrucibleClient#snapshots}).
     *
     * @param keeps what a session made from it comes back with: {@code memory}, {@code replay} or {@code files}
     * @param bytes what it holds on disk
     */
    public record Snapshot(String name, String sessionId, String language, String image, String keeps, long bytes,
            String createdAt) {}
}
