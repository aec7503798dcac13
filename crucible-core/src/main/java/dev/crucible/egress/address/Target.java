package dev.crucible.egress.address;

import java.net.InetAddress;

/**
 * Where a proxy request goes: a normalized host (a lower-case name without trailing dot, or an address's text), the
 * literal address when the host is one (null for a name), and the port.
 */
public record Target(String host, InetAddress address, int port) {
    /**
     * {@code host} (IPv6 without brackets) on {@code port}, normalized.
     *
     * @throws IllegalArgumentException when it is neither a strict IP literal nor a host name
     */
    public static Target of(String host, int port) {
        InetAddress literal = HostSyntax.literal(host);
        if (literal != null) {
            return new Target(HostSyntax.text(literal.getAddress()), literal, port);
        }
        return new Target(HostSyntax.name(host), null, port);
    }

    /** {@code host:port}, IPv6 in brackets. */
    public String authority() {
        return HostSyntax.authorityText(host, port);
    }
}
