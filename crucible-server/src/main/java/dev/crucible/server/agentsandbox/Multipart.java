package dev.crucible.server.agentsandbox;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One file field of a {@code multipart/form-data} body (RFC 7578), as python-runtime's {@code /upload} and sandboxd's
 * {@code PUT} take it: the part named {@code file}, its {@code filename} and bytes.
 */
final class Multipart {
    private static final Pattern BOUNDARY = Pattern.compile("(?i)boundary=(\"([^\"]+)\"|([^;\\s]+))");
    private static final Pattern NAME = Pattern.compile("(?i)[;\\s]name=\"([^\"]*)\"");
    private static final Pattern FILENAME = Pattern.compile("(?i)filename=\"([^\"]*)\"");

    private Multipart() {}

    /** The field {@code file}: its file name as sent (null when none) and its bytes. */
    record FilePart(String filename, byte[] data) {}

    /**
     * The part named {@code field} of {@code body}.
     *
     * @throws IllegalArgumentException for a body that is not multipart/form-data, or has no such part, saying so
     */
    static FilePart field(String contentType, byte[] body, String field) {
        Matcher m = contentType == null ? null : BOUNDARY.matcher(contentType);
        if (m == null || !contentType.toLowerCase(Locale.ROOT).startsWith("multipart/form-data") || !m.find()) {
            throw new IllegalArgumentException("send the file as multipart/form-data with a part named '" + field
                    + "' (Content-Type multipart/form-data; boundary=...)");
        }
        byte[] delimiter = ("--" + (m.group(2) != null ? m.group(2) : m.group(3))).getBytes(StandardCharsets.ISO_8859_1);
        int at = indexOf(body, delimiter, 0);
        while (at >= 0) {
            int headersStart = at + delimiter.length;
            if (headersStart + 2 <= body.length && body[headersStart] == '-' && body[headersStart + 1] == '-') {
                break; // the closing delimiter
            }
            int headersEnd = indexOf(body, "\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1), headersStart);
            if (headersEnd < 0) {
                break;
            }
            int next = indexOf(body, ("\r\n" + new String(delimiter, StandardCharsets.ISO_8859_1))
                    .getBytes(StandardCharsets.ISO_8859_1), headersEnd + 4);
            if (next < 0) {
                break;
            }
            String headers = new String(body, headersStart, headersEnd - headersStart, StandardCharsets.UTF_8);
            Matcher name = NAME.matcher(headers);
            if (name.find() && name.group(1).equals(field)) {
                Matcher filename = FILENAME.matcher(headers);
                return new FilePart(filename.find() ? filename.group(1) : null,
                        Arrays.copyOfRange(body, headersEnd + 4, next));
            }
            at = next + 2;
        }
        throw new IllegalArgumentException("the multipart/form-data body has no part named '" + field + "'");
    }

    private static int indexOf(byte[] haystack, byte[] needle, int from) {
        outer:
        for (int i = Math.max(0, from); i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
