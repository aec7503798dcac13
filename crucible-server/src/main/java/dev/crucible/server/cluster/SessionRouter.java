package dev.crucible.server.cluster;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Limits;
import dev.crucible.session.SessionManager;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sessions across replicas: a request for a session another replica holds is forwarded to it — method, path, query,
 * body and the headers that carry auth and content (the holder checks the token, as if the client had come to it) —
 * and its answer is streamed back. When the holder is gone, a replica that shares the data directory takes the session
 * over ({@link SessionManager#adopt}: its next cell resumes it); without one the session is lost: 410
 * {@code session_lost}. A forwarded request is always served where it lands, so requests never loop. While a peer
 * answers to this replica's own name ({@link Peers#conflict()}) every session route answers 503
 * {@code replica_name_conflict}: sessions made under a shared name would be lost to the other replica. Thread-safe.
 */
public final class SessionRouter {
    /** Marks a forwarded request, with the forwarding replica's name. */
    static final String FORWARDED = "X-Crucible-Forwarded-By";
    private static final List<String> REQUEST_HEADERS = List.of("Authorization", "Content-Type", "Accept",
            "X-Crucible-Request");
    private static final List<String> RESPONSE_HEADERS = List.of("Content-Type", "Retry-After", "Cache-Control",
            "Content-Disposition", "X-Content-Type-Options", "Content-Security-Policy");
    /** What E2B's SDKs send beside (their keys and tokens, the sandbox and port, the Connect protocol's). */
    private static final List<String> E2B_REQUEST_HEADERS = List.of("Authorization", "Content-Type", "Accept",
            "Accept-Encoding", "Content-Encoding", "X-API-KEY", "X-Access-Token", "E2b-Sandbox-Id", "E2b-Sandbox-Port",
            "E2B-Traffic-Access-Token", "Connect-Protocol-Version", "Connect-Timeout-Ms", "Connect-Content-Encoding",
            "Connect-Accept-Encoding", "Range");
    private static final List<String> E2B_RESPONSE_HEADERS = List.of("Content-Type", "Content-Encoding", "Retry-After",
            "Cache-Control", "Content-Disposition", "X-Content-Type-Options", "Content-Security-Policy",
            "Connect-Content-Encoding", "Connect-Accept-Encoding", "Content-Range", "Accept-Ranges");

    private final SessionManager sessions;
    private final Peers peers;
    private final HttpClient client;

    public SessionRouter(SessionManager sessions, Peers peers, HttpClient client) {
        this.sessions = sessions;
        this.peers = peers;
        this.client = client;
    }

    /** {@code handler}, for a route with a session id: run here when this replica holds the session, else forwarded. */
    public Handler owned(Handler handler) {
        return ctx -> {
            refuseOnNameConflict();
            if (!forwarded(ctx)) {
                handler.handle(ctx);
            }
        };
    }

    /** {@code handler}, for a session route without an id (create, list): always run here. */
    public Handler here(Handler handler) {
        return ctx -> {
            refuseOnNameConflict();
            handler.handle(ctx);
        };
    }

    /** @throws RequestException 503 {@code replica_name_conflict} while another replica answers to this one's name */
    private void refuseOnNameConflict() {
        String conflict = peers.conflict();
        if (conflict != null) {
            throw new RequestException(ErrorCode.REPLICA_NAME_CONFLICT, conflict);
        }
    }

    /** Forwards the request when another replica holds its session; false when it is to be served here. */
    private boolean forwarded(Context ctx) throws IOException, InterruptedException {
        return forwarded(ctx.pathParam("id"), ctx.header(FORWARDED) != null, base -> relay(base, ctx));
    }

    /**
     * A call of E2B's planes for sandbox (session) {@code id}, taken by a servlet filter before the routes: forwarded,
     * its answer streamed back as it comes (Connect's server streams, the code interpreter's lines), when another
     * replica holds the sandbox; false when it is to be served here (held here, taken over here, or no such one).
     *
     * @throws RequestException 410 {@code session_lost} or 504 {@code peer_timeout}, as for Crucible's own routes
     */
    public boolean forwarded(String id, HttpServletRequest req, HttpServletResponse res)
            throws IOException, InterruptedException {
        refuseOnNameConflict();
        return forwarded(id, req.getHeader(FORWARDED) != null, base -> relay(base, req, res));
    }

    /** Sends a request to the replica at a base URL. */
    @FunctionalInterface
    private interface Relay {
        void to(URI base) throws IOException, InterruptedException;
    }

    private boolean forwarded(String id, boolean sentHere, Relay relay) throws IOException, InterruptedException {
        if (sessions.replica() == null || id == null || !SessionManager.wellFormed(id) || sessions.holds(id)) {
            return false;
        }
        String owner = sessions.ownerOf(id);
        if (sentHere || owner == null || owner.equals(sessions.replica())) {
            sessions.adopt(id); // ours by name, or sent here: take it if its holder is gone (else: 404 as usual)
            return false;
        }
        if (forwardTo(owner, relay)) {
            return true;
        }
        if (sessions.adopt(id)) { // its holder is gone and the data directory is shared: resumed here
            return false;
        }
        String now = sessions.ownerOf(id);
        if (now != null && !now.equals(owner) && !now.equals(sessions.replica()) && forwardTo(now, relay)) {
            return true; // another replica took it over meanwhile
        }
        throw new RequestException(ErrorCode.SESSION_LOST, "the replica that held this session (" + owner
                + ") is gone and no replica here shares its data directory; its state and files are lost:"
                + " create a new session");
    }

    /**
     * Sends the request to replica {@code name}; false when it cannot be reached. Reachability is tried with a bare
     * connection first: the body is read only to be forwarded, since a request whose holder is gone is served here.
     */
    private boolean forwardTo(String name, Relay relay) throws IOException, InterruptedException {
        for (int attempt = 0; attempt < 2; attempt++) {
            URI base = peers.urlOf(name);
            if (base == null) {
                return false;
            }
            if (Peers.reachable(base)) {
                try {
                    relay.to(base);
                    return true;
                } catch (ConnectException | HttpConnectTimeoutException e) {
                    throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "the replica that holds this session ("
                            + name + ") stopped answering; retry");
                } catch (HttpTimeoutException e) {
                    throw new RequestException(ErrorCode.PEER_TIMEOUT, "the replica that holds this session (" + name
                            + ") accepted the request but did not answer within " + e.getMessage().replaceAll("\\D+", "")
                            + " ms: it may be stopped or overloaded. The session is still its: retry once its /readyz"
                            + " answers");
                }
            }
            peers.forget(name); // it may have moved (a restarted pod): ask the peers once more
        }
        return false;
    }

    private void relay(URI base, Context ctx) throws IOException, InterruptedException {
        byte[] body = ctx.bodyAsBytes();
        HttpResponse<InputStream> response = send(base, ctx.req(), body, REQUEST_HEADERS, answerBound(ctx.path(), body));
        ctx.status(response.statusCode());
        for (String header : RESPONSE_HEADERS) {
            response.headers().firstValue(header).ifPresent(value -> ctx.header(header, value));
        }
        ctx.result(response.body());
    }

    /**
     * Sends the request {@code req} with {@code body} and its {@code headers} to {@code base}, marked as forwarded by
     * this replica, its answer to begin within {@code boundMs}.
     */
    private HttpResponse<InputStream> send(URI base, HttpServletRequest req, byte[] body, List<String> headers,
            long boundMs) throws IOException, InterruptedException {
        String query = req.getQueryString();
        // the request's own path on the peer's origin, by concatenation (a resolve() of a path starting with "//"
        // would name another host)
        URI target = URI.create(base.toString() + req.getRequestURI() + (query == null ? "" : "?" + query));
        HttpRequest.Builder request = HttpRequest.newBuilder(target).method(req.getMethod(),
                body.length == 0 ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        for (String header : headers) {
            String value = req.getHeader(header);
            if (value != null) {
                request.header(header, value);
            }
        }
        request.header(FORWARDED, sessions.replica());
        request.timeout(Duration.ofMillis(boundMs));
        return client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    /**
     * Relays an E2B call to {@code base}: its headers of {@link #E2B_REQUEST_HEADERS}, its body; the answer's status,
     * headers and body streamed back, flushed as each part comes (a process's output, a cell's lines).
     */
    private void relay(URI base, HttpServletRequest req, HttpServletResponse res)
            throws IOException, InterruptedException {
        HttpResponse<InputStream> response = send(base, req, req.getInputStream().readAllBytes(), E2B_REQUEST_HEADERS,
                Limits.MAXIMUM.timeoutMs() + 2 * Limits.GRACE_MS); // a stream's answer begins at once, a unary within
        res.setStatus(response.statusCode());
        for (String header : E2B_RESPONSE_HEADERS) {
            response.headers().firstValue(header).ifPresent(value -> res.setHeader(header, value));
        }
        try (InputStream in = response.body()) {
            var out = res.getOutputStream();
            byte[] chunk = new byte[16 * 1024];
            for (int n; (n = in.read(chunk)) >= 0; ) {
                out.write(chunk, 0, n);
                out.flush();
            }
        }
    }

    /** How long a forwarded request that is not a cell may wait for its holder's answer. */
    static final long CALL_MS = 30_000;

    /**
     * How long a forwarded request may wait for its holder's answer to begin: a cell's own timeout ({@code timeout_ms}
     * of its body, else the longest a session's cells may take) plus twice {@link Limits#GRACE_MS} (the holder's own
     * interrupt grace, and a stuck interpreter's replacement); {@link #CALL_MS} for the other session calls. A holder that is stopped accepts
     * the connection (its kernel does) and never answers: without a bound the request would wait forever.
     */
    static long answerBound(String path, byte[] body) {
        if (!path.endsWith("/execute")) {
            return CALL_MS;
        }
        long timeout = Limits.MAXIMUM.timeoutMs();
        Matcher m = TIMEOUT.matcher(new String(body, 0, Math.min(body.length, 1 << 20),
                StandardCharsets.UTF_8));
        if (m.find()) {
            try {
                timeout = Math.min(timeout, Long.parseLong(m.group(1)));
            } catch (NumberFormatException e) {
                // the holder refuses it with its own words
            }
        }
        return timeout + 2 * Limits.GRACE_MS;
    }

    private static final Pattern TIMEOUT = Pattern.compile(
            "\"timeout_ms\"\\s*:\\s*(\\d{1,12})");

    /** The client that forwards: short to connect (a gone replica is told fast), each request bounded by its own. */
    public static HttpClient client() {
        return HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).version(HttpClient.Version.HTTP_1_1)
                .build();
    }
}
