package dev.crucible.egress.proxy;

import dev.crucible.egress.address.HostSyntax;
import dev.crucible.egress.address.Target;
import dev.crucible.egress.policy.EgressReason;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A proxy request's head: {@code CONNECT host:port HTTP/1.x} or {@code METHOD http://host[:port]/path HTTP/1.x}, its
 * headers, and the bytes the client sent after the head ({@code rest}, to be relayed). Strict: CRLF line ends, ASCII
 * only, no folded headers; anything else is {@link EgressReason#BAD_REQUEST}.
 */
record RequestHead(String method, Target target, String path, String version, List<String> headers, ByteBuffer rest) {
    private static final Pattern REQUEST_LINE = Pattern.compile("([A-Z]{1,20}) (\\S+) (HTTP/1\\.[01])");
    private static final Pattern HEADER = Pattern.compile("([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*");
    /** Headers for this hop only, or that the proxy sets itself. */
    private static final Set<String> DROPPED = Set.of("host", "connection", "proxy-connection", "keep-alive",
            "proxy-authorization", "proxy-authenticate", "te", "upgrade");

    boolean isConnect() {
        return method.equals("CONNECT");
    }

    /**
     * Reads a head from {@code client}, at most {@code maxBytes}; {@code touch} runs after each read.
     *
     * @throws Refusal BAD_REQUEST or HEADERS_TOO_LARGE
     * @throws EOFException when the client closed before the head ended
     */
    static RequestHead read(ReadableByteChannel client, int maxBytes, Runnable touch) throws IOException, Refusal {
        ByteBuffer buffer = ByteBuffer.allocate(maxBytes);
        int end = -1;
        int scanned = 0;
        while (end < 0) {
            if (!buffer.hasRemaining()) {
                throw new Refusal(EgressReason.HEADERS_TOO_LARGE, "at most " + maxBytes + " bytes");
            }
            if (client.read(buffer) < 0) {
                throw new EOFException("the client closed before the end of the request head");
            }
            touch.run();
            byte[] bytes = buffer.array();
            for (int i = Math.max(0, scanned - 3); i + 3 < buffer.position(); i++) {
                if (bytes[i] == '\r' && bytes[i + 1] == '\n' && bytes[i + 2] == '\r' && bytes[i + 3] == '\n') {
                    end = i;
                    break;
                }
            }
            scanned = buffer.position();
        }
        String head = new String(buffer.array(), 0, end, StandardCharsets.ISO_8859_1);
        ByteBuffer rest = ByteBuffer.wrap(buffer.array(), end + 4, buffer.position() - end - 4).slice();
        return parse(head, rest);
    }

    static RequestHead parse(String head, ByteBuffer rest) throws Refusal {
        for (int i = 0; i < head.length(); i++) {
            char c = head.charAt(i);
            boolean lineEnd = c == '\r' && i + 1 < head.length() && head.charAt(i + 1) == '\n'
                    || c == '\n' && i > 0 && head.charAt(i - 1) == '\r';
            if (!lineEnd && c != '\t' && (c < 0x20 || c > 0x7e)) {
                throw new Refusal(EgressReason.BAD_REQUEST, "control or non-ASCII byte in the request head");
            }
        }
        String[] lines = head.split("\r\n", -1);
        Matcher line = REQUEST_LINE.matcher(lines[0]);
        if (!line.matches()) {
            throw new Refusal(EgressReason.BAD_REQUEST, "request line is not 'METHOD TARGET HTTP/1.1'");
        }
        List<String> headers = new ArrayList<>();
        for (int i = 1; i < lines.length; i++) {
            Matcher header = HEADER.matcher(lines[i]);
            if (!header.matches()) {
                throw new Refusal(EgressReason.BAD_REQUEST, "malformed header line " + i);
            }
            if (!DROPPED.contains(header.group(1).toLowerCase(Locale.ROOT))) {
                headers.add(header.group(1) + ": " + header.group(2));
            }
        }
        String method = line.group(1);
        String target = line.group(2);
        try {
            if (method.equals("CONNECT")) {
                HostSyntax.Authority authority = HostSyntax.authority(target, false);
                if (authority.port() < 0) {
                    throw new IllegalArgumentException("CONNECT needs host:port");
                }
                return new RequestHead(method, target(authority), null, line.group(3), List.copyOf(headers), rest);
            }
            return absolute(method, target, line.group(3), headers, rest);
        } catch (IllegalArgumentException e) {
            throw new Refusal(EgressReason.BAD_REQUEST, e.getMessage());
        }
    }

    private static RequestHead absolute(String method, String target, String version, List<String> headers,
            ByteBuffer rest) {
        if (!target.regionMatches(true, 0, "http://", 0, 7)) {
            throw new IllegalArgumentException(target.regionMatches(true, 0, "https://", 0, 8)
                    ? "https goes through CONNECT host:443 (TLS stays end to end)"
                    : "forward requests need an absolute http:// URL");
        }
        int start = 7;
        int end = start;
        while (end < target.length() && "/?#".indexOf(target.charAt(end)) < 0) {
            end++;
        }
        String authorityText = target.substring(start, end);
        if (authorityText.indexOf('@') >= 0) {
            throw new IllegalArgumentException("user information in the URL is not supported");
        }
        HostSyntax.Authority authority = HostSyntax.authority(authorityText, false);
        int hash = target.indexOf('#', end);
        String path = target.substring(end, hash < 0 ? target.length() : hash);
        path = path.isEmpty() ? "/" : path.startsWith("?") ? "/" + path : path;
        HostSyntax.Authority withPort = authority.port() < 0
                ? new HostSyntax.Authority(authority.host(), 80, authority.bracketed()) : authority;
        return new RequestHead(method, target(withPort), path, version, List.copyOf(headers), rest);
    }

    private static Target target(HostSyntax.Authority authority) {
        Target target = Target.of(authority.host(), authority.port());
        if (authority.bracketed() && target.address() == null) {
            throw new IllegalArgumentException("'[" + authority.host() + "]' is not an IPv6 address");
        }
        if (!authority.bracketed() && target.host().indexOf(':') >= 0) {
            throw new IllegalArgumentException("write an IPv6 address in brackets");
        }
        return target;
    }

    /** The head sent to the origin for a forward request: origin-form, the target's Host, {@code Connection: close}. */
    byte[] originHead() {
        StringBuilder out = new StringBuilder(256);
        out.append(method).append(' ').append(path).append(' ').append(version).append("\r\n");
        String host = target.port() == 80 ? HostSyntax.authorityText(target.host(), 80).replaceFirst(":80$", "")
                : target.authority();
        out.append("Host: ").append(host).append("\r\n");
        for (String header : headers) {
            out.append(header).append("\r\n");
        }
        out.append("Connection: close\r\n\r\n");
        return out.toString().getBytes(StandardCharsets.ISO_8859_1);
    }
}
