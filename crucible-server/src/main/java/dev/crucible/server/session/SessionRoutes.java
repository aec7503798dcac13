package dev.crucible.server.session;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.WorkspacePaths;
import dev.crucible.sandbox.Isolation;
import dev.crucible.server.access.Auth;
import dev.crucible.server.http.Download;
import dev.crucible.server.http.JsonObject;
import dev.crucible.server.metrics.Metrics;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.CellMode;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.IdleAction;
import dev.crucible.session.spec.RestoreMode;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.workspace.SessionFiles;
import io.javalin.http.Context;
import java.io.IOException;
import java.time.Instant;
import java.util.Map;

/**
 * The session routes of design.md: sessions, cells, interrupts, restarts and files. Handlers only: the server's route
 * table registers them (behind the cluster's router); each throws {@code RequestException} for a refusal.
 */
public final class SessionRoutes {
    private final SessionManager sessions;
    private final Auth auth;
    private final BodyReader bodies;
    private final Metrics metrics;

    /** Reads and checks a JSON body (content type, size cap). */
    public interface BodyReader {
        <T> T read(Context ctx, Class<T> type) throws IOException;
    }

    public SessionRoutes(SessionManager sessions, Auth auth, BodyReader bodies, Metrics metrics) {
        this.sessions = sessions;
        this.auth = auth;
        this.bodies = bodies;
        this.metrics = metrics;
    }

    record LimitsBody(
            @JsonProperty("memory_mb") Integer memoryMb,
            @JsonProperty("pids") Integer pids,
            @JsonProperty("cpus") Double cpus,
            @JsonProperty("timeout_ms") Long timeoutMs,
            @JsonProperty("output_bytes") Integer outputBytes) {}

    record CreateBody(
            @JsonProperty("language") String language,
            @JsonProperty("limits") LimitsBody limits,
            @JsonProperty("idle_timeout_s") Long idleTimeoutS,
            @JsonProperty("restore") RestoreMode restore,
            @JsonProperty("image") String image,
            @JsonProperty("network") NetworkRequest network,
            @JsonProperty("on_idle") IdleAction onIdle,
            @JsonProperty("snapshot") String snapshot,
            @JsonProperty("isolation") Isolation isolation) {}

    record ExecuteBody(
            @JsonProperty("code") String code,
            @JsonProperty("mode") CellMode mode,
            @JsonProperty("timeout_ms") Long timeoutMs) {}

    private String owner(Context ctx) {
        return auth.owner(ctx.header("Authorization"));
    }

    /** A body is optional here: none, or {}, means every default. */
    public void create(Context ctx) throws Exception {
        CreateBody body = ctx.req().getContentLengthLong() == 0 ? new CreateBody(null, null, null, null, null, null, null, null, null)
                : bodies.read(ctx, CreateBody.class);
        LimitsBody l = body.limits();
        SessionLimits limits = l == null ? null
                : SessionLimits.DEFAULT.with(l.memoryMb(), l.pids(), l.cpus(), l.timeoutMs(), l.outputBytes());
        ctx.status(201).json(sessions.create(owner(ctx), new SessionManager.CreateRequest(body.language(), limits,
                body.idleTimeoutS(), body.restore() == null ? null : body.restore().wireName(), body.image(),
                body.network(), body.onIdle() == null ? null : body.onIdle().wireName(), body.snapshot(),
                body.isolation() == null ? null : body.isolation().wire())));
    }

    /** Narrows the session's egress for good: {@code {"allow": []}} locks it. */
    public void network(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id); // an unknown session is a 404 before the body is judged
        ctx.json(sessions.narrowNetwork(owner(ctx), id, bodies.read(ctx, NetworkRequest.class)));
    }

    public void list(Context ctx) {
        ctx.json(Map.of("sessions", sessions.list(owner(ctx))));
    }

    public void get(Context ctx) {
        ctx.json(sessions.get(owner(ctx), ctx.pathParam("id")));
    }

    public void delete(Context ctx) {
        sessions.delete(owner(ctx), ctx.pathParam("id"));
        ctx.json(JsonObject.of("id", ctx.pathParam("id"), "deleted", true));
    }

    public void execute(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id); // an unknown session is a 404 before the body is judged
        ExecuteBody body = bodies.read(ctx, ExecuteBody.class);
        CellResult result = sessions.execute(owner(ctx), id, body.code(),
                body.mode() == null ? null : body.mode().wireName(), body.timeoutMs());
        metrics.verdict(result.status());
        ctx.json(result);
    }

    public void interrupt(Context ctx) {
        ctx.json(Map.of("interrupted", sessions.interrupt(owner(ctx), ctx.pathParam("id"))));
    }

    public void restart(Context ctx) throws Exception {
        ctx.json(sessions.restart(owner(ctx), ctx.pathParam("id")));
    }

    /** {@code POST /v1/sessions/{id}/pause}: its sandbox saved whole behind gVisor, else stopped; its files kept. */
    public void pause(Context ctx) throws Exception {
        ctx.json(sessions.pauses(owner(ctx), ctx.pathParam("id")).pause());
    }

    record ForkBody(@JsonProperty("count") Integer count) {}

    /** {@code POST /v1/sessions/{id}/fork}: {@code count} (default 1) new sessions, each a copy of this one. */
    public void fork(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id); // an unknown session is a 404 before the body is judged
        ForkBody body = ctx.req().getContentLengthLong() == 0 ? new ForkBody(null) : bodies.read(ctx, ForkBody.class);
        ctx.json(sessions.pauses(owner(ctx), id).fork(body.count() == null ? 1 : body.count()));
    }

    record SnapshotBody(@JsonProperty("name") String name) {}

    /** {@code POST /v1/sessions/{id}/snapshots}: a named, durable copy of the session, to make new sessions from. */
    public void snapshot(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id); // an unknown session is a 404 before the body is judged
        ctx.status(201).json(sessions.pauses(owner(ctx), id).snapshot(bodies.read(ctx, SnapshotBody.class).name()));
    }

    record CommitBody(@JsonProperty("tag") String tag) {}

    /** {@code POST /v1/sessions/{id}/commit}: the session's workspace as a new image over its own. */
    public void commit(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id); // an unknown session is a 404 before the body is judged
        ctx.status(201).json(sessions.pauses(owner(ctx), id).commit(bodies.read(ctx, CommitBody.class).tag()));
    }

    /** {@code GET /v1/snapshots}: the token's snapshots, oldest first. */
    public void listSnapshots(Context ctx) {
        ctx.json(Map.of("snapshots", sessions.snapshots(owner(ctx))));
    }

    /** {@code DELETE /v1/snapshots/{name}}. */
    public void deleteSnapshot(Context ctx) throws Exception {
        sessions.deleteSnapshot(owner(ctx), ctx.pathParam("name"));
        ctx.json(JsonObject.of("name", ctx.pathParam("name"), "deleted", true));
    }

    /** {@code POST /v1/sessions/{id}/resume}: back now, rather than at its next call. */
    public void resume(Context ctx) throws Exception {
        ctx.json(sessions.pauses(owner(ctx), ctx.pathParam("id")).resume());
    }

    /**
     * {@code GET /v1/sessions/{id}/files}: lists {@code ?dir=} (relative to the workspace, or absolute), or downloads
     * {@code ?path=} when given; {@code ?user=root} reaches them as root of a session with a root of its own.
     */
    public void listFiles(Context ctx) {
        if (ctx.queryParam("path") != null) {
            download(ctx, queryPath(ctx));
            return;
        }
        SessionFiles files = files(ctx);
        String dir = ctx.queryParam("dir") == null ? "" : ctx.queryParam("dir");
        ctx.json(JsonObject.of("dir", dir, "files", files.list(dir).stream().map(e -> JsonObject.of("path", e.path(), "type",
                e.type(), "size", e.size(), "modified_at", Instant.ofEpochMilli(e.modifiedMs()).toString()))
                .toList()));
    }

    public void download(Context ctx) {
        download(ctx, routePath(ctx));
    }

    private void download(Context ctx, String path) {
        byte[] data = files(ctx).download(path);
        Download.fence(ctx.res(), path);
        ctx.result(data);
    }

    /** {@code PUT /v1/sessions/{id}/files/{path}} (in the workspace), or {@code PUT …/files?path=} (any path). */
    public void upload(Context ctx) throws IOException {
        String path = ctx.pathParamMap().containsKey("path") ? routePath(ctx) : queryPath(ctx);
        SessionFiles.check(path); // a bad path is refused before the body is read
        SessionFiles files = files(ctx);
        long cap = files.maxFileBytes();
        long declared = ctx.req().getContentLengthLong();
        if (declared > cap) {
            throw new RequestException(ErrorCode.FILE_TOO_LARGE, "the file has " + declared + " bytes; uploads are capped at "
                    + cap);
        }
        byte[] data = ctx.req().getInputStream().readNBytes((int) Math.min(Integer.MAX_VALUE - 8, cap + 1));
        files.upload(path, data); // refuses data.length > cap
        ctx.status(201).json(JsonObject.of("path", path, "size", data.length));
    }

    /** {@code DELETE /v1/sessions/{id}/files/{path}}, or {@code DELETE …/files?path=}. */
    public void deleteFile(Context ctx) {
        String path = ctx.pathParamMap().containsKey("path") ? routePath(ctx) : queryPath(ctx);
        files(ctx).delete(path);
        ctx.json(JsonObject.of("path", path, "deleted", true));
    }

    private SessionFiles files(Context ctx) {
        return sessions.files(owner(ctx), ctx.pathParam("id")).as(ctx.queryParam("user"));
    }

    /** A path in the route is the workspace's, always relative: an absolute one is asked for as {@code ?path=}. */
    private static String routePath(Context ctx) {
        String path = ctx.pathParam("path");
        if (path.startsWith("/")) {
            throw new RequestException(ErrorCode.INVALID_FILE, "a path in the route is relative to /workspace; name"
                    + " any path of the session's file system as ?path=, e.g. /v1/sessions/{id}/files?path=/etc/hosts");
        }
        return WorkspacePaths.validate(path);
    }

    private static String queryPath(Context ctx) {
        String path = ctx.queryParam("path");
        if (path == null || path.isEmpty()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "give the file as ?path= (absolute, such as /etc/hosts,"
                    + " or relative to /workspace), or in the route: /v1/sessions/{id}/files/{path}");
        }
        return path;
    }
}
