package dev.crucible.server.cluster;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.SessionManager;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import dev.crucible.sandbox.Limits;
import java.util.List;

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
        String id = ctx.pathParam("id");
        if (sessions.replica() == null || !SessionManager.wellFormed(id) || sessions.holds(id)) {
            return false;
        }
        String owner = sessions.ownerOf(id);
        if (ctx.header(FORWARDED) != null || owner == null || owner.equals(sessions.replica())) {
            sessions.adopt(id); // ours by name, or sent here: take it if its holder is gone (else: 404 as usual)
            return false;
        }
        if (forwardTo(owner, ctx)) {
            return true;
        }
        if (sessions.adopt(id)) { // its holder is gone and the data directory is shared: resumed here
            return false;
        }
        String now = sessions.ownerOf(id);
        if (now != null && !now.equals(owner) && !now.equals(sessions.replica()) && forwardTo(now, ctx)) {
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
    private boolean forwardTo(String name, Context ctx) throws IOException, InterruptedException {
        for (int attempt = 0; attempt < 2; attempt++) {
            URI base = peers.urlOf(name);
            if (base == null) {
                return false;
            }
            if (Peers.reachable(base)) {
                try {
                    relay(base, ctx);
                    return true;
                } catch (ConnectException | HttpConnectTimeoutException e) {
                    throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "the replica that holds this session ("
                            + name + ") stopped answering; retry");
                } catch (java.net.http.HttpTimeoutException e) {
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
        String query = ctx.queryString();
        // the matched route's own path on the peer's origin, by concatenation (a resolve() of a path starting with
        // "//" would name another host)
        URI target = URI.create(base.toString() + ctx.req().getRequestURI() + (query == null ? "" : "?" + query));
        byte[] body = ctx.bodyAsBytes();
        HttpRequest.Builder request = HttpRequest.newBuilder(target).method(ctx.method().name(),
                body.length == 0 ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        for (String header : REQUEST_HEADERS) {
            String value = ctx.header(header);
            if (value != null) {
                request.header(header, value);
            }
        }
        request.header(FORWARDED, sessions.replica());
        request.timeout(Duration.ofMillis(answerBound(ctx.path(), body)));
        HttpResponse<InputStream> response = client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
        ctx.status(response.statusCode());
        for (String header : RESPONSE_HEADERS) {
            response.headers().firstValue(header).ifPresent(value -> ctx.header(header, value));
        }
        ctx.result(response.body());
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
        java.util.regex.Matcher m = TIMEOUT.matcher(new String(body, 0, Math.min(body.length, 1 << 20),
                java.nio.charset.StandardCharsets.UTF_8));
        if (m.find()) {
            try {
                timeout = Math.min(timeout, Long.parseLong(m.group(1)));
            } catch (NumberFormatException e) {
                // the holder refuses it with its own words
            }
        }
        return timeout + 2 * Limits.GRACE_MS;
    }

    private static final java.util.regex.Pattern TIMEOUT = java.util.regex.Pattern.compile(
            "\"timeout_ms\"\\s*:\\s*(\\d{1,12})");

    /** The client that forwards: short to connect (a gone replica is told fast), each request bounded by its own. */
    public static HttpClient client() {
        return HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).version(HttpClient.Version.HTTP_1_1)
                .build();
    }
}
