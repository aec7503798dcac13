package dev.crucible.error;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/**
 * Every refusal Crucible answers with: its stable wire name ({@code {"error": {"code": …}}}), its HTTP status, and
 * how long a client should wait before asking again when it is worth asking again ({@code Retry-After}).
 */
public enum ErrorCode {
    /** The body or a parameter is not what the route takes. */
    INVALID_REQUEST(400),
    /** The body is not valid JSON for the route. */
    INVALID_JSON(400),
    UNKNOWN_LANGUAGE(400),
    /** A file path or content a program or session may not have. */
    INVALID_FILE(400),
    NOT_A_FILE(400),
    FILE_ERROR(400),
    UNAUTHORIZED(401),
    PERMISSION_DENIED(403),
    /** A preview link that is forged, expired, or for another session or port. */
    INVALID_PREVIEW(403),
    /** A Host header that is not this server's (DNS rebinding). */
    FORBIDDEN_HOST(403),
    /** A cross-site Origin. */
    FORBIDDEN_ORIGIN(403),
    /** No such route. */
    NOT_FOUND(404),
    SESSION_NOT_FOUND(404),
    FILE_NOT_FOUND(404),
    /** No background process of the session has that pid (it never did, or ended long ago and was let go). */
    PROCESS_NOT_FOUND(404),
    /** The token has no snapshot of that name. */
    SNAPSHOT_NOT_FOUND(404),
    METHOD_NOT_ALLOWED(405),
    /** The replica that held the session is gone, and no replica that could take it over shares its files. */
    SESSION_LOST(410),
    /** The session is running another cell. */
    SESSION_BUSY(409),
    /** The process has ended, or its stdin was closed (or never kept open: {@code stdin_open}). */
    STDIN_CLOSED(409),
    /** The token has a snapshot of that name already (delete it first, or choose another name). */
    SNAPSHOT_EXISTS(409),
    PAYLOAD_TOO_LARGE(413),
    CELL_TOO_LARGE(413),
    FILE_TOO_LARGE(413),
    QUOTA_EXCEEDED(413),
    URI_TOO_LONG(414),
    UNSUPPORTED_MEDIA_TYPE(415),
    INVALID_LIMITS(422),
    TOO_MANY_FILES(422),
    /** The runtime is known but its tools are not installed on this host. */
    RUNTIME_UNAVAILABLE(422),
    /** The request asks for an isolation tier this host cannot give (gVisor's runsc missing or failing its test). */
    ISOLATION_UNAVAILABLE(422),
    /** The request names an image that is not in the store (and may not be pulled). */
    IMAGE_NOT_FOUND(422),
    /** The request asked for network egress outside the operator's allowlist (or the server allows none). */
    EGRESS_NOT_ALLOWED(422),
    /** The session's file system cannot become an image (it runs on the host's root, which is no image). */
    COMMIT_UNAVAILABLE(422),
    /** All sandboxes are busy and the queue is full. */
    TOO_MANY_REQUESTS(429, 1),
    TOO_MANY_SESSIONS(429, 60),
    /** The session runs as many commands as its supervisor keeps at once; one may start once another has ended. */
    TOO_MANY_PROCESSES(429, 1),
    MEMORY_BUDGET_EXHAUSTED(429, 60),
    HEADERS_TOO_LARGE(431),
    INTERNAL(500),
    /** The server was allowed to pull the image, but the registry refused, failed or sent what may not be used. */
    IMAGE_PULL_FAILED(502),
    /** Nothing listens on that port in the session's sandbox (or its sandbox is not running). */
    PORT_NOT_LISTENING(502),
    /** The server in the session answered what is not an HTTP/1.x response within the proxy's limits. */
    UPSTREAM_INVALID(502),
    INTERPRETER_UNAVAILABLE(503),
    /** This build or host gives sessions no supervisor (crucible-supervisor.c, crucible-launch): no commands. */
    COMMANDS_UNAVAILABLE(503),
    /** This host gives sessions no network namespace of the server's (not root, no crucible-launch): no ports. */
    PORTS_UNAVAILABLE(503),
    INTERRUPTED(503),
    SHUTTING_DOWN(503),
    /** Every turn stayed busy for the request's whole timeout plus the grace: nothing ran; worth asking again. */
    QUEUE_TIMEOUT(503, 1),
    /**
     * Another replica answers to this replica's name (replicas on one host without {@code --replica} all take the host
     * name): sessions are refused until each replica has a name of its own.
     */
    REPLICA_NAME_CONFLICT(503),
    /** The replica that holds the session accepted the forwarded request but did not answer in its bound. */
    PEER_TIMEOUT(504, 1),
    /**
     * The image is being pulled for this server and was not ready within the request's timeout; the pull goes on, and
     * a request after Retry-After may find the image.
     */
    IMAGE_PULLING(503, 5),
    /**
     * The registry sent nothing for a while during the pull this request waited for, until the request's timeout: the
     * pull gives up at its read timeout, and a later request pulls again, resuming what arrived.
     */
    IMAGE_PULL_TIMEOUT(504),
    /** The sessions' workspace quotas together would pass the disk budget the server gives sessions. */
    DISK_BUDGET_EXHAUSTED(507),
    /**
     * The data directory's file system is full (or its quota reached): what the request would have stored (a new
     * session, a record, a cell's log line) was not kept, and nothing stored before was lost.
     */
    DATA_DIR_FULL(507);

    private final int httpStatus;
    private final int retryAfterSeconds;

    ErrorCode(int httpStatus) {
        this(httpStatus, 0);
    }

    ErrorCode(int httpStatus, int retryAfterSeconds) {
        this.httpStatus = httpStatus;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** The wire name, e.g. {@code session_not_found}. */
    @JsonValue
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public int httpStatus() {
        return httpStatus;
    }

    /** Seconds for {@code Retry-After}, or 0 when the answer carries none. */
    public int retryAfterSeconds() {
        return retryAfterSeconds;
    }
}
