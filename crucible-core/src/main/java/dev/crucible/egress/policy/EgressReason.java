package dev.crucible.egress.policy;

import java.util.Locale;

/**
 * Why the egress proxy allowed or refused a request: the HTTP status the client is answered with and the one-line
 * explanation it reads (after the target, in the status line's reason phrase and the body).
 */
public enum EgressReason {
    /** The host and port are listed and every address the name resolved to may be reached. */
    ALLOWED(200, "allowed"),
    NOT_LISTED(403, "the host is not on this sandbox's egress allowlist"),
    PORT_NOT_LISTED(403, "the host is on this sandbox's egress allowlist, but not on this port"),
    /** The name resolved to a loopback, private, link-local, metadata or other forbidden address (see AddressClass). */
    FORBIDDEN_ADDRESS(403, "the host resolves to an address the sandbox may not reach"),
    /** The sandbox's byte budget is spent: no new connection is made. */
    BYTE_CAP(403, "this sandbox's egress byte budget is spent"),
    CONNECTION_CAP(429, "this sandbox has as many egress connections open as it may; close one and retry"),
    BAD_REQUEST(400, "not a proxy request: send CONNECT host:port or an absolute http:// URL"),
    HEADERS_TOO_LARGE(431, "the request head is larger than the proxy accepts"),
    UNRESOLVABLE(502, "the host name does not resolve"),
    UNREACHABLE(502, "no address of the host accepted a connection");

    private final int status;
    private final String explanation;

    EgressReason(int status, String explanation) {
        this.status = status;
        this.explanation = explanation;
    }

    public boolean allowed() {
        return this == ALLOWED;
    }

    /** The HTTP status a refusal is answered with (200 for {@link #ALLOWED}). */
    public int status() {
        return status;
    }

    /** One line, without the target: what happened and, where the sandbox can, what to do. */
    public String explanation() {
        return explanation;
    }

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
