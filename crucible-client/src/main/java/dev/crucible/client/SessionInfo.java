package dev.crucible.client;

import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * A session as the server describes it ({@code POST /v1/sessions}, {@code GET /v1/sessions/{id}}); {@code isolation}
 * is the tier its sandboxes run behind ({@code namespaces} or {@code gvisor}; {@code Session.Request.withIsolation}
 * asks for one), null from a server that does not say.
 *
 * @param limits what its sandbox runs within
 * @param image the OCI image it runs in, as asked for, and {@code imageDigest} the image's id; null for the host's
 * @param network its egress: the hosts it may reach ({@code allow}) and the connections judged; null without network
 * @param processes its background processes
 * @param ports the ports its servers listen on
 * @param onIdle what its idle timeout does: {@code delete} or {@code pause}
 * @param restored in the answer that made it from a snapshot: what came back ({@code memory}, {@code replay},
 *     {@code files})
 */
public record SessionInfo(String id, String language, String createdAt, String expiresAt, String lastUsedAt,
        Long idleTimeoutS, String restore, String state, String isolation, Limits limits, String image,
        String imageDigest, JsonNode network, List<ProcessInfo> processes, List<Port> ports, String onIdle,
        String restored) {

    /** What a session's sandbox runs within. */
    public record Limits(int memoryMb, int pids, double cpus, long timeoutMs, int outputBytes) {}

    /** A port a session's server listens on, and the path to reach it by ({@code /v1/sessions/{id}/ports/{port}/}). */
    public record Port(int port, String path) {}

    /**
     * What pausing or resuming a session answers ({@link Session#pause}, {@link Session#resume}).
     *
     * @param state {@code paused}, or {@code running} after a resume
     * @param keeps after a pause, what a resume brings back: {@code memory} (behind gVisor), {@code replay} or
     *     {@code files}
     * @param restored after a resume, what came back (the same words); null when the session was not paused
     * @param replayed after a resume by replay, how many logged cells ran ok
     */
    public record Pause(String id, String state, String keeps, String restored, Integer replayed, long tookMs) {}

    /**
     * A snapshot ({@link Session#snapshot}, {@link CrucibleClient.Sessions#snapshots}).
     *
     * @param keeps what a session made from it comes back with: {@code memory}, {@code replay} or {@code files}
     * @param bytes what it holds on disk
     */
    public record Snapshot(String name, String sessionId, String language, String image, String keeps, long bytes,
            String createdAt, Long tookMs) {}

    /** What forking a session answers ({@link Session#fork}): the new sessions, and what they came back with. */
    public record Fork(String id, List<SessionInfo> forks, String keeps, long tookMs) {}

    /**
     * A session committed as an image ({@link Session#commit}): its reference, digest and id, the image it was made
     * from, and the new layer's size, entries and whiteouts.
     */
    public record Commit(String image, String digest, String id, String base, long layerBytes, long entries,
            long whiteouts, long tookMs) {}

    /** A signed, expiring link to one port ({@link Session#preview}); {@code host} with previews' own listener. */
    public record Preview(String url, int port, String expiresAt, String host) {}
}
