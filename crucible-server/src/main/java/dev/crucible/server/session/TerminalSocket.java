package dev.crucible.server.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.access.Auth;
import dev.crucible.server.access.BrowserGuard;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionProcesses;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.Terminal;
import io.javalin.config.RoutesConfig;
import io.javalin.http.Context;
import io.javalin.websocket.WsCloseStatus;
import io.javalin.websocket.WsConfig;
import io.javalin.websocket.WsContext;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.websocket.api.Callback;

/**
 * {@code GET /v1/sessions/{id}/terminal} upgraded to a WebSocket (issue 27 item 4): a terminal in the session's
 * sandbox, raw bytes both ways as xterm.js's AttachAddon sends and takes them (input as text or binary frames, output
 * as binary frames). Without {@code ?pid=} it starts a login shell on a PTY of {@code ?rows=&cols=} (24x80), and
 * hangs it up (SIGHUP to its group) when the socket closes, as closing a terminal window does; with {@code ?pid=} it
 * attaches to a background process started with {@code pty}, replays what its ring kept, and leaves it running when
 * the socket closes. Resize with {@code POST …/processes/{pid}/resize}. The upgrade is checked as every route is: the
 * browser guard's Host and Origin rules, then the bearer token (from a browser, which cannot send the header, as the
 * subprotocol {@code crucible.bearer.<base64url>} after {@code crucible.terminal}: {@link Auth#webSocket}); a session
 * of another token is a 404.
 */
public final class TerminalSocket {
    public static final String PATH = "/v1/sessions/{id}/terminal";
    private static final String SHELL = "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l";
    private static final int CHUNK = 64 * 1024;
    /** How long the output pump waits before it looks again whether the socket is still open. */
    private static final long POLL_MS = 1_000;
    /** How often an open terminal is pinged (Jetty closes a WebSocket idle for 30 s). */
    private static final long PING_S = 15;
    /** How long a client may leave a frame of output unread before its terminal is closed. */
    private static final long SEND_S = 60;

    private final SessionManager sessions;
    private final Auth auth;
    private final BrowserGuard guard;
    /** The terminals open now, by WebSocket session id. */
    private final Map<String, Attached> open = new ConcurrentHashMap<>();

    public TerminalSocket(SessionManager sessions, Auth auth, BrowserGuard guard) {
        this.sessions = sessions;
        this.auth = auth;
        this.guard = guard;
    }

    /** One open terminal: its process, and whether the socket started it (and so hangs it up). */
    private record Attached(SessionProcesses processes, BackgroundProcess process, boolean owned) {}

    /** Registers the upgrade's checks and the socket's handlers. */
    public void install(RoutesConfig routes) {
        routes.wsBeforeUpgrade(PATH, this::checkUpgrade);
        routes.ws(PATH, this::configure);
    }

    /** A plain GET, without the upgrade: says how to ask. */
    public void plain(Context ctx) {
        sessions.processes(auth.owner(ctx.header("Authorization")), ctx.pathParam("id"));
        throw new RequestException(ErrorCode.INVALID_REQUEST, "this route is a WebSocket: connect with an Upgrade:"
                + " websocket request (e.g. xterm.js's AttachAddon, or crucible session --shell)");
    }

    private void checkUpgrade(Context ctx) {
        guard.checkHostAndOrigin(ctx.header("Host"), ctx.header("Origin"), ctx.req().getLocalPort());
        String authorization = Auth.webSocket(ctx.header("Authorization"), ctx.header("Sec-WebSocket-Protocol"));
        auth.check(authorization);
        sessions.processes(auth.owner(authorization), ctx.pathParam("id")); // 404 before the upgrade
    }

    private void configure(WsConfig ws) {
        ws.onConnect(ctx -> {
            try {
                Attached attached = attach(ctx);
                open.put(ctx.sessionId(), attached);
                attached.process().attached(1);
                ctx.enableAutomaticPings(PING_S, TimeUnit.SECONDS); // an idle terminal is not a dead one
                Thread.ofVirtual().name("crucible-terminal-output").start(() -> pump(ctx, attached));
            } catch (RequestException e) {
                ctx.closeSession(WsCloseStatus.POLICY_VIOLATION, truncated(e.code().wireName() + ": "
                        + e.getMessage()));
            }
        });
        ws.onMessage(ctx -> input(ctx.sessionId(), ctx.message().getBytes(StandardCharsets.UTF_8)));
        ws.onBinaryMessage(ctx -> {
            ByteBuffer data = ctx.data().duplicate();
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            input(ctx.sessionId(), bytes);
        });
        ws.onClose(ctx -> hangUp(ctx.sessionId()));
        ws.onError(ctx -> hangUp(ctx.sessionId()));
    }

    private Attached attach(WsContext ctx) throws InterruptedException {
        SessionProcesses processes = sessions.processes(auth.owner(Auth.webSocket(ctx.header("Authorization"),
                ctx.header("Sec-WebSocket-Protocol"))), ctx.pathParam("id"));
        String pid = ctx.queryParam("pid");
        if (pid != null) {
            BackgroundProcess process;
            try {
                process = processes.get(Long.parseLong(pid));
            } catch (NumberFormatException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "pid must be a number, not " + pid);
            }
            if (process.info().pty() == null) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "process " + pid + " runs on pipes: start it with"
                        + " \"pty\" to attach a terminal");
            }
            return new Attached(processes, process, false);
        }
        Terminal size = new Terminal(number(ctx, "rows", 24), number(ctx, "cols", 80));
        if (!size.valid()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "rows and cols are from 1 to " + Terminal.MAX);
        }
        long started = processes.start(new CommandRequest(null, List.of("/bin/sh", "-c", SHELL),
                Map.of("TERM", "xterm-256color"), null, null, null, null, true, true, size)).pid();
        return new Attached(processes, processes.get(started), true);
    }

    private static int number(WsContext ctx, String name, int otherwise) {
        String value = ctx.queryParam(name);
        try {
            return value == null ? otherwise : Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, name + " must be a number, not " + value);
        }
    }

    /** The process's output to the socket, from the oldest byte kept, until it ends or the socket closes. */
    private void pump(WsContext ctx, Attached attached) {
        long next = 0;
        try {
            while (open.get(ctx.sessionId()) == attached) {
                BackgroundProcess.Output out = attached.process().read(next, CHUNK, POLL_MS);
                for (BackgroundProcess.Chunk c : out.chunks()) {
                    // one frame at a time, each sent before the next is read: a client that does not read holds
                    // back only its own terminal's output (kept in the process's ring), never the server's memory
                    Callback.Completable sent = new Callback.Completable();
                    ctx.session.sendBinary(ByteBuffer.wrap(c.bytes()), sent);
                    sent.get(SEND_S, TimeUnit.SECONDS);
                }
                next = out.next();
                if (out.ended()) {
                    var info = attached.process().info();
                    ctx.closeSession(WsCloseStatus.NORMAL_CLOSURE, info.exitCode() != null ? "exit " + info.exitCode()
                            : info.signal() != null ? "signal " + info.signal() : "ended");
                    return;
                }
                if (!out.chunks().isEmpty()) {
                    attached.processes().touch(); // a terminal in use is use of its session
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            // the socket went away under a send, or its client stopped reading for a minute: let it go
            hangUp(ctx.sessionId());
            ctx.closeSession(WsCloseStatus.POLICY_VIOLATION, "the terminal's output was not read");
        }
    }

    private void input(String socket, byte[] bytes) throws InterruptedException {
        Attached attached = open.get(socket);
        if (attached == null || bytes.length == 0) {
            return;
        }
        try {
            attached.processes().write(attached.process(), bytes, false);
        } catch (RequestException e) { // it ended meanwhile: the output pump closes the socket
        }
    }

    /** The socket closed: a terminal it started gets SIGHUP (its group), as when a terminal window closes. */
    private void hangUp(String socket) {
        Attached attached = open.remove(socket);
        if (attached != null) {
            attached.process().attached(-1);
        }
        if (attached != null && attached.owned()) {
            try {
                attached.processes().signal(attached.process(), "HUP", true);
            } catch (RequestException | InterruptedException e) {
                // ended meanwhile, or the session is gone: nothing to hang up
            }
        }
    }

    /** A WebSocket close reason is at most 123 bytes. */
    private static String truncated(String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        return bytes.length <= 120 ? reason : new String(bytes, 0, 120, StandardCharsets.UTF_8);
    }
}
