package dev.crucible.server.desktop;

import dev.crucible.server.access.Auth;
import dev.crucible.server.session.SessionRoutes;
import dev.crucible.session.SessionManager;
import io.javalin.http.Context;

/**
 * The desktop routes of a session (issue 54): {@code POST /v1/sessions/{id}/desktop} starts it,
 * {@code …/desktop/screenshot} answers a PNG, {@code …/desktop/actions} does a list of input actions. Handlers
 * only: the server's route table registers them.
 */
public final class DesktopRoutes {
    private final SessionManager sessions;
    private final Desktops desktops;
    private final Auth auth;
    private final SessionRoutes.BodyReader bodies;

    public DesktopRoutes(SessionManager sessions, Auth auth, SessionRoutes.BodyReader bodies) {
        this.sessions = sessions;
        this.desktops = new Desktops(sessions);
        this.auth = auth;
        this.bodies = bodies;
    }

    private String owner(Context ctx) {
        return auth.owner(ctx.header("Authorization"));
    }

    /** Starts the session's desktop: {@code 201} and where it is. */
    public void start(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id); // an unknown session is a 404 before the body is judged
        Desktops.Spec spec = ctx.req().getContentLengthLong() == 0 ? null : bodies.read(ctx, Desktops.Spec.class);
        ctx.status(201).json(desktops.start(owner(ctx), id, spec));
    }

    /** The screen as a PNG. */
    public void screenshot(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id);
        ctx.contentType("image/png").header("Cache-Control", "no-store").result(desktops.screenshot(owner(ctx), id));
    }

    /** Does the body's actions in order; their results. */
    public void actions(Context ctx) throws Exception {
        String id = ctx.pathParam("id");
        sessions.require(owner(ctx), id);
        DesktopAction.Batch batch = bodies.read(ctx, DesktopAction.Batch.class);
        ctx.json(desktops.act(owner(ctx), id, batch.actions()));
    }
}
