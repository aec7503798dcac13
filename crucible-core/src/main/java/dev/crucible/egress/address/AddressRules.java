package dev.crucible.egress.address;

import java.net.InetAddress;
import java.util.List;

/**
 * Classifies IP addresses for the egress proxy: everything that reaches the host, its network, a cloud's metadata
 * service or a special-purpose range is forbidden ({@link AddressClass#forbidden()}). IPv6 addresses that embed an
 * IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) are classified by what they
 * embed, so {@code ::ffff:127.0.0.1} and {@code 2002:7f00:1::} are loopback. Stateless and thread-safe.
 *
 * <p>The operator's verbatim listing (an address or range written in the policy) is the only exemption; that is the
 * proxy's business, not this class's: see {@link dev.crucible.egress.policy.EgressPolicy#listsAddress}.
 */
public final class AddressRules {
    private record Rule(Cidr range, AddressClass kind) {
        static Rule of(String range, AddressClass kind) {
            return new Rule(Cidr.parse(range), kind);
        }
    }

    /** An IPv6 range whose addresses carry an IPv4 address at {@code offset} (inverted for Teredo's client). */
    private record Embedding(Cidr range, int offset, boolean inverted) {
        static Embedding of(String range, int offset, boolean inverted) {
            return new Embedding(Cidr.parse(range), offset, inverted);
        }

        byte[] embedded(byte[] address) {
            byte[] v4 = new byte[4];
            for (int i = 0; i < 4; i++) {
                v4[i] = (byte) (inverted ? ~address[offset + i] : address[offset + i]);
            }
            return v4;
        }
    }

    /** First match wins: the specific entries (metadata, broadcast) come before the ranges holding them. */
    private static final List<Rule> RULES = List.of(
            Rule.of("169.254.169.254/32", AddressClass.METADATA),
            Rule.of("100.100.100.200/32", AddressClass.METADATA),
            Rule.of("168.63.129.16/32", AddressClass.METADATA),
            Rule.of("0.0.0.0/32", AddressClass.UNSPECIFIED),
            Rule.of("0.0.0.0/8", AddressClass.THIS_NETWORK),
            Rule.of("10.0.0.0/8", AddressClass.PRIVATE),
            Rule.of("100.64.0.0/10", AddressClass.SHARED),
            Rule.of("127.0.0.0/8", AddressClass.LOOPBACK),
            Rule.of("169.254.0.0/16", AddressClass.LINK_LOCAL),
            Rule.of("172.16.0.0/12", AddressClass.PRIVATE),
            Rule.of("192.0.0.0/24", AddressClass.RESERVED),
            Rule.of("192.0.2.0/24", AddressClass.DOCUMENTATION),
            Rule.of("192.88.99.0/24", AddressClass.RESERVED),
            Rule.of("192.168.0.0/16", AddressClass.PRIVATE),
            Rule.of("198.18.0.0/15", AddressClass.BENCHMARK),
            Rule.of("198.51.100.0/24", AddressClass.DOCUMENTATION),
            Rule.of("203.0.113.0/24", AddressClass.DOCUMENTATION),
            Rule.of("224.0.0.0/4", AddressClass.MULTICAST),
            Rule.of("255.255.255.255/32", AddressClass.BROADCAST),
            Rule.of("240.0.0.0/4", AddressClass.RESERVED),
            Rule.of("fd00:ec2::254/128", AddressClass.METADATA),
            Rule.of("::/128", AddressClass.UNSPECIFIED),
            Rule.of("::1/128", AddressClass.LOOPBACK),
            Rule.of("::/96", AddressClass.RESERVED),
            Rule.of("64:ff9b:1::/48", AddressClass.PRIVATE),
            Rule.of("100::/64", AddressClass.RESERVED),
            Rule.of("2001:2::/48", AddressClass.BENCHMARK),
            Rule.of("2001:10::/28", AddressClass.RESERVED),
            Rule.of("2001:20::/28", AddressClass.RESERVED),
            Rule.of("2001:db8::/32", AddressClass.DOCUMENTATION),
            Rule.of("3fff::/20", AddressClass.DOCUMENTATION),
            Rule.of("fc00::/7", AddressClass.UNIQUE_LOCAL),
            Rule.of("fe80::/10", AddressClass.LINK_LOCAL),
            Rule.of("fec0::/10", AddressClass.PRIVATE),
            Rule.of("ff00::/8", AddressClass.MULTICAST));

    /** Teredo carries two IPv4 addresses (server, then the inverted client); either one forbidden forbids it. */
    private static final List<Embedding> EMBEDDINGS = List.of(
            Embedding.of("::ffff:0:0/96", 12, false),
            Embedding.of("64:ff9b::/96", 12, false),
            Embedding.of("2002::/16", 2, false),
            Embedding.of("2001::/32", 4, false),
            Embedding.of("2001::/32", 12, true));

    private AddressRules() {}

    /** The class of {@code address} (never null): {@link AddressClass#PUBLIC} when no rule holds it. */
    public static AddressClass classify(InetAddress address) {
        return classify(address.getAddress());
    }

    static AddressClass classify(byte[] address) {
        if (address.length == 16) {
            for (Embedding embedding : EMBEDDINGS) {
                if (embedding.range().contains(address)) {
                    AddressClass inside = classify(embedding.embedded(address));
                    if (inside.forbidden()) {
                        return inside;
                    }
                }
            }
        }
        for (Rule rule : RULES) {
            if (rule.range().contains(address)) {
                return rule.kind();
            }
        }
        return AddressClass.PUBLIC;
    }
}
