package dev.crucible.egress.address;

import java.util.Locale;

/**
 * What kind of destination an IP address is, as {@link AddressRules} reads it. Only {@link #PUBLIC} may be reached
 * through the egress proxy unless the operator lists the address (or a range holding it) verbatim.
 */
public enum AddressClass {
    PUBLIC,
    /** 127.0.0.0/8, ::1: the host itself. */
    LOOPBACK,
    /** 0.0.0.0, ::: connecting to it reaches the host itself on Linux. */
    UNSPECIFIED,
    /** 0.0.0.0/8 ("this network"). */
    THIS_NETWORK,
    /** 10/8, 172.16/12, 192.168/16, fec0::/10 (site-local), 64:ff9b:1::/48 (local NAT64). */
    PRIVATE,
    /** 100.64.0.0/10 (carrier-grade NAT, shared address space). */
    SHARED,
    /** 169.254/16, fe80::/10. */
    LINK_LOCAL,
    /** Cloud instance metadata and platform endpoints: 169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16. */
    METADATA,
    /** fc00::/7. */
    UNIQUE_LOCAL,
    /** 224/4, ff00::/8. */
    MULTICAST,
    /** 255.255.255.255. */
    BROADCAST,
    /** 198.18/15, 2001:2::/48. */
    BENCHMARK,
    /** 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20. */
    DOCUMENTATION,
    /** Other special-purpose ranges: 240/4, 192.0.0/24, 192.88.99/24, ::/96, 100::/64, ORCHID. */
    RESERVED;

    /** Whether the proxy refuses this class unless the address is listed verbatim. */
    public boolean forbidden() {
        return this != PUBLIC;
    }

    /** The lower-case name used in decisions and refusal bodies. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
