package dev.crucible.egress.policy;

import java.util.List;

/**
 * A request asked for egress wider than the list it must stay within ({@link EgressPolicy#narrow}). The server answers
 * it with 422; the message names every entry that is not allowed.
 */
public final class EgressNotAllowedException extends RuntimeException {
    private final List<String> notAllowed;

    EgressNotAllowedException(List<String> notAllowed) {
        super("egress not within the server's allowlist: " + String.join(", ", notAllowed)
                + " (ask only for listed HOST:PORT pairs, or subdomains and ports of listed wildcards)");
        this.notAllowed = List.copyOf(notAllowed);
    }

    /** The refused entries in canonical form ({@code host:port}), in the order asked. */
    public List<String> notAllowed() {
        return notAllowed;
    }
}
