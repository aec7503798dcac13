package dev.crucible.server.ports;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The host of a preview's own origin: {@code {port}-{hex}.{domain}}, one per session and port, where {@code hex} is
 * the 128 random bits of the session's id (an id {@code REPLICA.hex} is named by its hex alone: a host name's label
 * keeps no dot). As E2B's {@code getHost}. Browsers send host names in lower case; the domain is compared so.
 *
 * @param port the session's port, 1-65535
 * @param hex the session id's 32 hex digits
 */
record PreviewHost(int port, String hex) {
    private static final Pattern LABEL = Pattern.compile("([1-9][0-9]{0,4})-([0-9a-f]{32})");

    /** The host of {@code session}'s {@code port}. */
    static PreviewHost of(String session, int port) {
        return new PreviewHost(port, session.substring(session.lastIndexOf('.') + 1));
    }

    /**
     * What a request's {@code Host} names under {@code domain}: {@code {port}-{hex}.{domain}}, with or without a
     * {@code :port} of the listener; null for anything else (none, another domain, a label of another form).
     */
    static PreviewHost parse(String host, String domain) {
        if (host == null) {
            return null;
        }
        String name = host.toLowerCase(Locale.ROOT);
        int colon = name.lastIndexOf(':');
        if (colon >= 0 && name.substring(colon + 1).matches("[0-9]{1,5}")) {
            name = name.substring(0, colon);
        }
        if (!name.endsWith("." + domain)) {
            return null;
        }
        Matcher m = LABEL.matcher(name.substring(0, name.length() - domain.length() - 1));
        if (!m.matches() || Integer.parseInt(m.group(1)) > 65_535) {
            return null;
        }
        return new PreviewHost(Integer.parseInt(m.group(1)), m.group(2));
    }

    /** {@code {port}-{hex}.{domain}}. */
    String name(String domain) {
        return port + "-" + hex + "." + domain;
    }

    /**
     * Whether {@code grant} is for this host's session and port (its session is {@code hex} or {@code REPLICA.hex}; a
     * grant of port 0 is of every port of its session: an E2B sandbox's traffic token).
     */
    boolean grants(PreviewTokens.Grant grant) {
        String session = grant.session();
        return (grant.port() == port || grant.port() == 0) && (session.equals(hex) || session.endsWith("." + hex));
    }
}
