package dev.crucible.server.ports;

import dev.crucible.error.RequestException;
import dev.crucible.session.SessionPorts;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.server.HttpStream;
import org.eclipse.jetty.server.Request;

/**
 * One HTTP exchange with a server in a session, over a connection made in the session's network namespace (kept alive
 * between exchanges that carry no body: {@link SessionPorts#reuse}). The client's request was parsed by Jetty; a new
 * HTTP/1.1 request is written upstream from its parts (never the client's bytes), so nothing a client sends after its
 * request can reach the session's server as a second one. Hop-by-hop fields, {@code Authorization} and the preview
 * cookie are dropped; the response's head is read with caps ({@link UpstreamResponse}), its fields passed by an allow
 * list ({@link UpstreamHeaders}) and its body streamed back as it comes. A {@code 101} to an upgrade (a WebSocket)
 * turns the connection into a byte relay ({@link UpgradeRelay}).
 */
final class PortProxy {
    /** Bytes moved per read. */
    static final int BUFFER = 64 * 1024;
    /** The buffer an answer's head is read through: small, so that a small answer costs no large allocation. */
    static final int HEAD_BUFFER = 8 * 1024;
    /** Bytes of a response body moved per read: large, so that a big body costs few writes. */
    static final int BODY_BUFFER = 256 * 1024;
    /** How long the session's server may stay silent before the exchange is given up (long polls, event streams). */
    static final int READ_TIMEOUT_MS = 10 * 60_000;
    /** The cookie a preview listener sets for a preview's origin: the session's server never sees it. */
    static final String PREVIEW_COOKIE = "crucible_preview";

    /** Fields that belong to one connection, or are the API's own: never passed on. */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection",
            "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host",
            "content-length", "expect", "authorization", "x-crucible-request", "e2b-traffic-access-token");

    /** Where the response goes: the API's own origin (fenced in), or a preview origin of its own. */
    enum Origin {
        /** On the API's origin: every response gets an opaque origin ({@code CSP: sandbox}), and no cookie. */
        API,
        /** On a listener of previews' own, one origin per session and port: the application's host-only cookies pass. */
        PREVIEW
    }

    /**
     * The fields every response served on the API's origin carries: the page gets an opaque origin (scripts run, but
     * cannot read the API's responses or its storage), nothing is sniffed, no referrer leaks a preview path.
     */
    static final String CSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

    private PortProxy() {}

    /**
     * Forwards the request to {@code port} of the session as {@code target} (path and query as the server sees them)
     * and streams its answer back. A request without a body whose method is safe ({@link #KEPT_METHODS}) goes over a
     * connection kept alive from an earlier exchange when there is one (once more over a new one if the server let
     * that go before answering), and its connection is kept again when the answer was read to its framed end with
     * nothing after it; every other request (a body, an upgrade) goes over a new connection with
     * {@code Connection: close}, never kept: no byte a client sent can be left in a connection another client's
     * request takes. The connection is closed at the end, kept, or handed to the relay of an upgrade.
     *
     * @return the status sent back (Javalin's context must be told: it sets its own at the end of the request)
     * @throws RequestException {@code upstream_invalid} for an answer that is not HTTP/1.x, or none, before anything
     *     was sent back; as {@link SessionPorts#connect} when the port cannot be reached
     */
    static int exchange(HttpServletRequest req, HttpServletResponse res, SessionPorts ports, int port,
            String target, String prefix, Origin origin) throws IOException {
        String upgrade = upgradeAsked(req);
        long length = req.getContentLengthLong();
        boolean chunkedBody = length < 0 && req.getHeader("Transfer-Encoding") != null;
        boolean keepAlive = upgrade == null && length <= 0 && !chunkedBody && KEPT_METHODS.contains(req.getMethod());
        byte[] requestHead = head(req, target, prefix, upgrade, length, chunkedBody, port, keepAlive);
        SessionPorts.Connection connection = keepAlive ? ports.reuse(port) : ports.connect(port);
        boolean handedOver = false;
        boolean ended = false; // the answer read to its framed end, nothing after it: the connection may be kept
        try {
            InputStream in;
            UpstreamResponse head;
            while (true) {
                try {
                    in = send(connection, requestHead, req, length, chunkedBody);
                    head = readFinalHead(in, upgrade != null);
                    break;
                } catch (IOException e) {
                    if (!connection.reused() || e instanceof SocketTimeoutException
                            || !(e instanceof UpstreamResponse.NoAnswer || e instanceof SentNothing)) {
                        throw e;
                    }
                    connection.close(); // the server let a kept connection go: the request once more, on a new one
                    connection = ports.connect(port);
                }
            }
            if (head.status() == 101) {
                if (upgrade == null) {
                    throw UpstreamResponse.invalid("it switched protocols without being asked to");
                }
                UpstreamHeaders.copy(head, res, origin);
                // Jetty sends the 101 when the request ends, then gives the connection to the relay
                Request core =
                        ServletContextRequest.getServletContextRequest(req);
                core.setAttribute(HttpStream.UPGRADE_CONNECTION_ATTRIBUTE, new UpgradeRelay(
                        core.getConnectionMetaData().getConnection().getEndPoint(),
                        core.getConnectionMetaData().getConnector().getExecutor(), connection, in));
                res.setHeader("Upgrade", head.header("Upgrade") != null ? head.header("Upgrade") : upgrade);
                res.setHeader("Connection", "Upgrade");
                res.setStatus(101);
                handedOver = true;
                return 101;
            }
            res.setStatus(head.status());
            UpstreamHeaders.copy(head, res, origin);
            boolean keep = keepAlive && head.persistent();
            boolean bodiless = req.getMethod().equals("HEAD") || head.status() == 204 || head.status() == 304;
            if (bodiless) {
                ended = keep && in.available() == 0;
                return head.status();
            }
            if (head.contentLength() >= 0) {
                res.setContentLengthLong(head.contentLength());
            }
            OutputStream out = res.getOutputStream();
            InputStream body = head.chunked() ? new ChunkedInput(in)
                    : head.contentLength() >= 0 ? new BoundedInput(in, head.contentLength()) : in;
            // a small sized answer gets a buffer of its size: a large one per request is zeroed memory for nothing
            int size = head.contentLength() >= 0 ? (int) Math.min(BODY_BUFFER, Math.max(1, head.contentLength()))
                    : BODY_BUFFER;
            copyStreaming(body, out, connection, size);
            // an answer that ends only where the connection does (no length, not chunked) leaves nothing to keep
            ended = keep && (head.chunked() || head.contentLength() >= 0) && in.available() == 0;
            return head.status();
        } catch (IOException e) {
            if (res.isCommitted()) {
                return res.getStatus(); // the client has part of the answer (or went away): nothing more to tell it
            }
            throw UpstreamResponse.invalid(e.getMessage());
        } finally {
            if (ended) {
                connection.release();
            } else if (!handedOver) {
                connection.close();
            }
        }
    }

    /** Methods whose body-less requests may go over a kept-alive connection (and be sent once more on a new one). */
    private static final Set<String> KEPT_METHODS = Set.of("GET", "HEAD", "OPTIONS");

    /** Writing the request failed before any of it was taken: a kept connection its server had let go. */
    private static final class SentNothing extends IOException {
        SentNothing(IOException cause) {
            super(cause.getMessage(), cause);
        }
    }

    /** Writes the request (head and body) to {@code connection}; the stream its answer is read from. */
    private static InputStream send(SessionPorts.Connection connection, byte[] head, HttpServletRequest req,
            long length, boolean chunkedBody) throws IOException {
        Socket socket = connection.channel().socket();
        socket.setSoTimeout(READ_TIMEOUT_MS);
        OutputStream up = socket.getOutputStream();
        try {
            up.write(head);
        } catch (IOException e) {
            throw new SentNothing(e);
        }
        if (length > 0 || chunkedBody) {
            copyBody(req.getInputStream(), up, chunkedBody);
        }
        up.flush();
        connection.used();
        return new BufferedInputStream(socket.getInputStream(), HEAD_BUFFER);
    }

    /** The upgrade protocol asked for ({@code Upgrade} with {@code Connection: upgrade}), or null. */
    private static String upgradeAsked(HttpServletRequest req) {
        String upgrade = req.getHeader("Upgrade");
        // h2c is a client's offer of HTTP/2 over this hop (the JDK's client makes it): not the session's to take
        return upgrade != null && connectionTokens(req).contains("upgrade")
                && !upgrade.strip().toLowerCase(Locale.ROOT).startsWith("h2c") ? upgrade : null;
    }

    private static Set<String> connectionTokens(HttpServletRequest req) {
        return Collections.list(req.getHeaders("Connection")).stream()
                .flatMap(v -> Arrays.stream(v.split(","))).map(t -> t.strip().toLowerCase(Locale.ROOT))
                .collect(Collectors.toSet());
    }

    /** The request head sent upstream: rebuilt from Jetty's parse, never the client's bytes. */
    private static byte[] head(HttpServletRequest req, String target, String prefix, String upgrade, long length,
            boolean chunked, int port, boolean keepAlive) {
        StringBuilder h = new StringBuilder(512);
        h.append(req.getMethod()).append(' ').append(target).append(" HTTP/1.1\r\n");
        Set<String> named = connectionTokens(req);
        for (String name : Collections.list(req.getHeaderNames())) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(lower) || named.contains(lower) || lower.startsWith("x-forwarded-")) {
                continue;
            }
            for (String value : Collections.list(req.getHeaders(name))) {
                if (lower.equals("cookie")) {
                    value = withoutPreviewCookie(value);
                    if (value.isEmpty()) {
                        continue;
                    }
                }
                if (value.indexOf('\r') < 0 && value.indexOf('\n') < 0) {
                    h.append(name).append(": ").append(value).append("\r\n");
                }
            }
        }
        h.append("Host: localhost:").append(port).append("\r\n");
        String host = req.getHeader("Host");
        if (host != null && host.indexOf('\r') < 0 && host.indexOf('\n') < 0) {
            h.append("X-Forwarded-Host: ").append(host).append("\r\n");
        }
        h.append("X-Forwarded-Proto: ").append(req.getScheme()).append("\r\n");
        h.append("X-Forwarded-For: ").append(req.getRemoteAddr()).append("\r\n");
        if (!prefix.isEmpty()) {
            h.append("X-Forwarded-Prefix: ").append(prefix).append("\r\n");
        }
        if (length >= 0 && (length > 0 || !bodiless(req.getMethod()))) {
            h.append("Content-Length: ").append(length).append("\r\n");
        } else if (chunked) {
            h.append("Transfer-Encoding: chunked\r\n");
        }
        String wsVersion = UpgradePassThrough.version(req);
        if (upgrade != null && wsVersion != null && req.getHeader("Sec-WebSocket-Version") == null) {
            h.append("Sec-WebSocket-Version: ").append(wsVersion).append("\r\n"); // hidden from Javalin, not from it
        }
        if (upgrade != null) {
            h.append("Connection: Upgrade\r\nUpgrade: ").append(upgrade).append("\r\n");
        } else {
            h.append(keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
        }
        h.append("\r\n");
        return h.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    private static boolean bodiless(String method) {
        return method.equals("GET") || method.equals("HEAD") || method.equals("OPTIONS") || method.equals("DELETE");
    }

    /** A {@code Cookie} value without the preview cookie (the session's server never sees the link's proof). */
    static String withoutPreviewCookie(String cookies) {
        return Arrays.stream(cookies.split(";")).map(String::strip)
                .filter(c -> !c.isEmpty() && !c.startsWith(PREVIEW_COOKIE + "="))
                .collect(Collectors.joining("; "));
    }

    private static void copyBody(InputStream from, OutputStream to, boolean chunked) throws IOException {
        byte[] buf = new byte[BUFFER];
        int n;
        while ((n = from.read(buf)) > 0) {
            if (chunked) {
                to.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            }
            to.write(buf, 0, n);
            if (chunked) {
                to.write(CRLF);
            }
        }
        if (chunked) {
            to.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        }
    }

    private static final byte[] CRLF = {'\r', '\n'};

    /** The first head that is not an interim {@code 1xx} (a {@code 101} is final when an upgrade was asked). */
    private static UpstreamResponse readFinalHead(InputStream in, boolean upgrading) throws IOException {
        while (true) {
            UpstreamResponse head = UpstreamResponse.read(in);
            if (head.status() >= 200 || head.status() == 101 && upgrading) {
                return head;
            }
            if (head.status() == 101) {
                throw UpstreamResponse.invalid("it switched protocols without being asked to");
            }
        }
    }

    /** The body as it comes: each read written and flushed (event streams, long polls), the session kept in use. */
    private static void copyStreaming(InputStream from, OutputStream to, SessionPorts.Connection connection,
            int size) throws IOException {
        byte[] buf = new byte[size];
        int n;
        while ((n = from.read(buf)) > 0) {
            to.write(buf, 0, n);
            if (from.available() == 0) { // a pause upstream: what came goes out now (no flush between full reads)
                to.flush();
            }
            connection.used();
        }
    }
}
