package dev.crucible.egress.address;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The host and authority syntax shared by policy entries and proxy requests. Strict on purpose: an IPv4 address is
 * four decimal octets without leading zeros ({@code 127.1}, {@code 0x7f.0.0.1} and {@code 2130706433} are refused, as
 * resolvers read them differently), an IPv6 address has no zone, a name is LDH labels (plus {@code _}) whose last label
 * is not numeric. Never looks a name up.
 */
public final class HostSyntax {
    /** {@code host[:port]} split; {@code port} is -1 when absent, {@code bracketed} for {@code [v6]}. */
    public record Authority(String host, int port, boolean bracketed) {}

    private static final Pattern IPV4 = Pattern.compile("(0|[1-9][0-9]{0,2})(\\.(0|[1-9][0-9]{0,2})){3}");
    private static final Pattern LABEL = Pattern.compile("[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?");
    private static final Pattern NUMERIC_LABEL = Pattern.compile("[0-9]+|0x[0-9a-f]*");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9a-fA-F:.]+");

    private HostSyntax() {}

    /** The address {@code text} is written as literally (no brackets), or null when it is not an IP literal. */
    public static InetAddress literal(String text) {
        if (IPV4.matcher(text).matches()) {
            for (String octet : text.split("\\.")) {
                if (Integer.parseInt(octet) > 255) {
                    return null;
                }
            }
            return Inet4Address.ofLiteral(text);
        }
        if (text.indexOf(':') >= 0 && IPV6_CHARS.matcher(text).matches()) {
            try {
                return Inet6Address.ofLiteral(text);
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
        return null;
    }

    /**
     * {@code text} as a lower-case DNS name without its trailing dot.
     *
     * @throws IllegalArgumentException saying what is wrong with it
     */
    public static String name(String text) {
        String name = text.toLowerCase(Locale.ROOT);
        if (name.endsWith(".")) {
            name = name.substring(0, name.length() - 1);
        }
        if (name.isEmpty() || name.length() > 253) {
            throw new IllegalArgumentException("'" + text + "' is not a host name (1 to 253 characters)");
        }
        String[] labels = name.split("\\.", -1);
        for (String label : labels) {
            if (!LABEL.matcher(label).matches()) {
                throw new IllegalArgumentException("'" + text + "' is not a host name: label '" + label
                        + "' must be 1 to 63 letters, digits, '-' or '_', not starting or ending with '-'");
            }
        }
        if (NUMERIC_LABEL.matcher(labels[labels.length - 1]).matches()) {
            throw new IllegalArgumentException("'" + text + "' is neither a host name nor a dotted-quad IPv4 address"
                    + " (write IPv4 as four decimal numbers, e.g. 10.0.0.1)");
        }
        return name;
    }

    /**
     * Splits {@code host[:port]}, {@code [v6][:port]}, or (when {@code bareIpv6}) a bare IPv6 address without a port.
     *
     * @throws IllegalArgumentException when the port is not 1..65535 or the brackets do not close
     */
    public static Authority authority(String text, boolean bareIpv6) {
        if (text.startsWith("[")) {
            int close = text.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("'" + text + "' opens '[' but does not close it");
            }
            String rest = text.substring(close + 1);
            if (!rest.isEmpty() && !rest.startsWith(":")) {
                throw new IllegalArgumentException("'" + text + "' has '" + rest + "' after ']' (expected :PORT)");
            }
            return new Authority(text.substring(1, close), rest.isEmpty() ? -1 : port(text, rest.substring(1)), true);
        }
        int first = text.indexOf(':');
        if (first < 0) {
            return new Authority(text, -1, false);
        }
        if (text.indexOf(':', first + 1) >= 0) {
            if (bareIpv6) {
                return new Authority(text, -1, false);
            }
            throw new IllegalArgumentException("'" + text + "': write an IPv6 address in brackets, e.g. [::1]:443");
        }
        return new Authority(text.substring(0, first), port(text, text.substring(first + 1)), false);
    }

    private static int port(String text, String port) {
        if (!port.matches("[0-9]{1,5}") || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535) {
            throw new IllegalArgumentException("'" + text + "' has port '" + port + "' (expected 1 to 65535)");
        }
        return Integer.parseInt(port);
    }

    /** The conventional text of a 4- or 16-byte address: dotted quad, or RFC 5952 IPv6 ({@code ::ffff:0:0}). */
    public static String text(byte[] address) {
        if (address.length == 4) {
            return (address[0] & 0xff) + "." + (address[1] & 0xff) + "." + (address[2] & 0xff) + "." + (address[3] & 0xff);
        }
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = (address[2 * i] & 0xff) << 8 | address[2 * i + 1] & 0xff;
        }
        int bestStart = -1;
        int bestLength = 1;
        for (int i = 0; i < 8; i++) {
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) {
                bestStart = i;
                bestLength = j - i;
            }
            i = Math.max(i, j);
        }
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                text.append("::");
                i += bestLength - 1;
                continue;
            }
            if (!text.isEmpty() && text.charAt(text.length() - 1) != ':') {
                text.append(':');
            }
            text.append(Integer.toHexString(groups[i]));
        }
        return text.toString();
    }

    /** {@code host:port}, with IPv6 in brackets. */
    public static String authorityText(String host, int port) {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
}
