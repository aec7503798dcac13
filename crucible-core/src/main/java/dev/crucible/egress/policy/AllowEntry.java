package dev.crucible.egress.policy;

import dev.crucible.egress.address.Cidr;
import dev.crucible.egress.address.HostSyntax;
import dev.crucible.egress.address.Target;
import java.net.InetAddress;
import java.util.Locale;

/**
 * One entry of an {@link EgressPolicy}: a name, a {@code *.domain} wildcard (subdomains at any depth, not the domain
 * itself), or an address range (a single address is a full-length range), each on one port. Immutable.
 */
record AllowEntry(Kind kind, String name, Cidr range, int port) {
    enum Kind { NAME, WILDCARD, RANGE }

    static final int DEFAULT_PORT = 443;

    /**
     * Reads one entry.
     *
     * @throws IllegalArgumentException naming the entry and what is wrong with it
     */
    static AllowEntry parse(String raw) {
        String text = raw.strip().toLowerCase(Locale.ROOT);
        try {
            return read(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("egress entry '" + raw + "': " + e.getMessage()
                    + ". Write HOST[:PORT], *.DOMAIN[:PORT], IP[:PORT] or CIDR[:PORT] (IPv6 in brackets: [::1]:443);"
                    + " no port means 443", e);
        }
    }

    private static AllowEntry read(String text) {
        if (text.isEmpty()) {
            throw new IllegalArgumentException("the entry is empty");
        }
        if (text.startsWith("*.")) {
            HostSyntax.Authority authority = HostSyntax.authority(text.substring(2), false);
            String suffix = HostSyntax.name(authority.host());
            if (suffix.indexOf('.') < 0) {
                throw new IllegalArgumentException("'*." + suffix + "' is too wide: name a domain of two labels or more,"
                        + " e.g. *.example.com");
            }
            return new AllowEntry(Kind.WILDCARD, suffix, null, portOr(authority));
        }
        if (text.indexOf('*') >= 0) {
            throw new IllegalArgumentException("a wildcard is '*.' at the start followed by a domain");
        }
        HostSyntax.Authority authority = HostSyntax.authority(text, true);
        String host = authority.host();
        if (host.indexOf('/') >= 0 || HostSyntax.literal(host) != null) {
            Cidr range = Cidr.parse(host);
            int narrowest = range.network().length == 4 ? 8 : 16;
            if (range.prefix() < narrowest) {
                throw new IllegalArgumentException("/" + range.prefix() + " is too wide (at most /" + narrowest
                        + " for this family): list the ranges you mean");
            }
            return new AllowEntry(Kind.RANGE, null, range, portOr(authority));
        }
        if (authority.bracketed()) {
            throw new IllegalArgumentException("'[" + host + "]' is not an IPv6 address");
        }
        return new AllowEntry(Kind.NAME, HostSyntax.name(host), null, portOr(authority));
    }

    private static int portOr(HostSyntax.Authority authority) {
        return authority.port() < 0 ? DEFAULT_PORT : authority.port();
    }

    /** Whether this entry names {@code target}'s host, on any port. */
    boolean namesHost(Target target) {
        return switch (kind) {
            case NAME -> target.address() == null && name.equals(target.host());
            case WILDCARD -> target.address() == null && target.host().endsWith("." + name);
            case RANGE -> target.address() != null && range.contains(target.address());
        };
    }

    /**
     * Whether this entry names what a sandbox's proxy variables keep off the proxy: {@code localhost}, or a range
     * holding {@code 127.0.0.1} or {@code ::1} (its {@code no_proxy}, set with the proxy's address).
     */
    boolean namesSandboxLoopback() {
        return switch (kind) {
            case NAME -> name.equals("localhost");
            case WILDCARD -> false;
            case RANGE -> range.contains(IPV4_LOOPBACK) || range.contains(IPV6_LOOPBACK);
        };
    }

    private static final byte[] IPV4_LOOPBACK = {127, 0, 0, 1};
    private static final byte[] IPV6_LOOPBACK = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

    /** Whether this is a range entry holding {@code address} on {@code port}: the operator's verbatim exemption. */
    boolean listsAddress(InetAddress address, int port) {
        return kind == Kind.RANGE && this.port == port && range.contains(address);
    }

    /** Whether everything {@code other} allows, this entry allows. */
    boolean covers(AllowEntry other) {
        if (other.port != port) {
            return false;
        }
        return switch (kind) {
            case NAME -> other.kind == Kind.NAME && other.name.equals(name);
            case WILDCARD -> other.kind != Kind.RANGE && (other.name.endsWith("." + name)
                    || other.kind == Kind.WILDCARD && other.name.equals(name));
            case RANGE -> other.kind == Kind.RANGE && range.covers(other.range);
        };
    }

    /** The canonical text, port always written: {@code pypi.org:443}, {@code *.example.com:80}, {@code [::1]:8080}. */
    String text() {
        return switch (kind) {
            case NAME -> name + ":" + port;
            case WILDCARD -> "*." + name + ":" + port;
            case RANGE -> HostSyntax.authorityText(range.toString(), port);
        };
    }
}
