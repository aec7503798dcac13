package dev.crucible.egress.address;

import java.net.InetAddress;
import java.util.Arrays;

/**
 * An address range: the first {@code prefix} bits of {@code network} (4 bytes for IPv4, 16 for IPv6). The bits after
 * the prefix are zero (the constructor refuses others). Immutable.
 */
public record Cidr(byte[] network, int prefix) {
    public Cidr {
        network = network.clone();
        if (network.length != 4 && network.length != 16) {
            throw new IllegalArgumentException("an address is 4 or 16 bytes, not " + network.length);
        }
        if (prefix < 0 || prefix > network.length * 8) {
            throw new IllegalArgumentException("prefix /" + prefix + " is outside 0.." + network.length * 8);
        }
        for (int bit = prefix; bit < network.length * 8; bit++) {
            if ((network[bit / 8] & (0x80 >>> (bit % 8))) != 0) {
                throw new IllegalArgumentException("bits after the /" + prefix + " prefix must be zero");
            }
        }
    }

    /** {@code text} as {@code ADDRESS/PREFIX} or a single literal address; never looks a name up. */
    public static Cidr parse(String text) {
        int slash = text.indexOf('/');
        InetAddress address = HostSyntax.literal(slash < 0 ? text : text.substring(0, slash));
        if (address == null) {
            throw new IllegalArgumentException("'" + text + "' is not an IP address or ADDRESS/PREFIX");
        }
        byte[] bytes = address.getAddress();
        if (bytes.length == 4 && text.indexOf(':') >= 0) {
            // the JDK reads ::ffff:a.b.c.d as IPv4; a range written in IPv6 stays IPv6
            byte[] mapped = new byte[16];
            mapped[10] = (byte) 0xff;
            mapped[11] = (byte) 0xff;
            System.arraycopy(bytes, 0, mapped, 12, 4);
            bytes = mapped;
        }
        if (slash < 0) {
            return new Cidr(bytes, bytes.length * 8);
        }
        String bits = text.substring(slash + 1);
        if (!bits.matches("[0-9]{1,3}")) {
            throw new IllegalArgumentException("'" + text + "' has no prefix length after the /");
        }
        return new Cidr(bytes, Integer.parseInt(bits));
    }

    /** Whether {@code address} (of the same family) is in this range. */
    public boolean contains(byte[] address) {
        if (address.length != network.length) {
            return false;
        }
        int whole = prefix / 8;
        for (int i = 0; i < whole; i++) {
            if (address[i] != network[i]) {
                return false;
            }
        }
        int rest = prefix % 8;
        if (rest == 0) {
            return true;
        }
        int mask = (0xff << (8 - rest)) & 0xff;
        return (address[whole] & mask) == (network[whole] & mask);
    }

    public boolean contains(InetAddress address) {
        return contains(address.getAddress());
    }

    /** Whether every address of {@code other} is in this range. */
    public boolean covers(Cidr other) {
        return other.network.length == network.length && other.prefix >= prefix && contains(other.network);
    }

    boolean isSingleAddress() {
        return prefix == network.length * 8;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Cidr c && c.prefix == prefix && Arrays.equals(c.network, network);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(network) * 31 + prefix;
    }

    @Override
    public String toString() {
        String address = HostSyntax.text(network);
        return isSingleAddress() ? address : address + "/" + prefix;
    }
}
