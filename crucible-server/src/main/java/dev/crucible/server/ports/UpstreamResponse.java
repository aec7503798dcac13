package dev.crucible.server.ports;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.io.IOException;
import java.io.InputStream;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The head of a response from a server in a session, read with caps: the status line and the header fields as sent,
 * refused when it is not plain HTTP/1.x (obsolete line folding, a malformed field, framing that contradicts itself).
 * What comes after the head stays in {@code in}.
 *
 * @param status the status code (100-599)
 * @param headers the fields in order, names as sent
 * @param http11 whether its version is HTTP/1.1 (persistent unless it says {@code Connection: close})
 */
record UpstreamResponse(int status, List<Field> headers, boolean http11) {
    /** A head longer than this is refused (as the egress proxy refuses a request head). */
    static final int HEAD_LIMIT = 64 * 1024;

    /** One header field. */
    record Field(String name, String value) {}

    // compiled once: String.matches compiles its pattern on every call, per field of every answer
    private static final Pattern VERSION = Pattern.compile("HTTP/1\\.[01]");
    private static final Pattern STATUS = Pattern.compile("[1-5][0-9][0-9]");
    private static final Pattern TOKEN =
            Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final Pattern LENGTH = Pattern.compile("[0-9]{1,18}");

    /** The connection ended (or was reset) before the first byte of an answer: nothing of the exchange came back. */
    static final class NoAnswer extends IOException {
        NoAnswer(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Whether the server keeps the connection after this answer: HTTP/1.1 without {@code Connection: close}. */
    boolean persistent() {
        return http11 && headers.stream().filter(f -> f.name().equalsIgnoreCase("Connection"))
                .flatMap(f -> Arrays.stream(f.value().split(",")))
                .noneMatch(t -> t.strip().equalsIgnoreCase("close"));
    }

    /** The value of the first field named {@code name} (any case), or null. */
    String header(String name) {
        return headers.stream().filter(f -> f.name().equalsIgnoreCase(name)).map(Field::value).findFirst().orElse(null);
    }

    /** Whether the body is chunked: {@code Transfer-Encoding} ending in {@code chunked}. */
    boolean chunked() {
        String te = header("Transfer-Encoding");
        return te != null && te.toLowerCase(Locale.ROOT).strip().endsWith("chunked");
    }

    /** The declared body length, or -1 when none is declared. */
    long contentLength() {
        String cl = header("Content-Length");
        return cl == null ? -1 : Long.parseLong(cl.strip());
    }

    /**
     * Reads one head from {@code in}, byte by byte up to the blank line (nothing of the body is consumed).
     *
     * @throws RequestException {@code upstream_invalid} for what is not an HTTP/1.x response head within the cap
     * @throws IOException when the connection fails or ends first
     */
    static UpstreamResponse read(InputStream in) throws IOException {
        byte[] buf = new byte[1024];
        int n = 0;
        while (n < 4 || !(buf[n - 4] == '\r' && buf[n - 3] == '\n' && buf[n - 2] == '\r' && buf[n - 1] == '\n')) {
            int b;
            try {
                b = in.read();
            } catch (SocketTimeoutException e) {
                throw e;
            } catch (IOException e) {
                throw n == 0 ? new NoAnswer("the server in the session reset the connection without answering", e) : e;
            }
            if (b < 0) {
                throw n == 0 ? new NoAnswer("the server in the session closed the connection without answering", null)
                        : new IOException("the server in the session closed the connection in the middle of its"
                                + " answer's head");
            }
            if (n == HEAD_LIMIT) {
                throw invalid("its head is longer than " + HEAD_LIMIT + " bytes");
            }
            if (n == buf.length) {
                buf = Arrays.copyOf(buf, Math.min(HEAD_LIMIT, buf.length * 2));
            }
            buf[n++] = (byte) b;
        }
        String[] lines = new String(buf, 0, n - 4, StandardCharsets.ISO_8859_1).split("\r\n", -1);
        String[] status = lines[0].split(" ", 3);
        if (status.length < 2 || !VERSION.matcher(status[0]).matches() || !STATUS.matcher(status[1]).matches()) {
            throw invalid("its status line is '" + printable(lines[0]) + "'");
        }
        List<Field> fields = new ArrayList<>();
        for (int i = 1; i < lines.length; i++) {
            String line = lines[i];
            int colon = line.indexOf(':');
            if (line.isEmpty() || line.charAt(0) == ' ' || line.charAt(0) == '\t') {
                throw invalid("it folds a header over lines (obsolete line folding)");
            }
            if (colon <= 0 || !TOKEN.matcher(line.substring(0, colon)).matches()
                    || line.indexOf('\r') >= 0 || line.indexOf('\n') >= 0 || line.indexOf('\0') >= 0) {
                throw invalid("a header line is malformed: '" + printable(line) + "'");
            }
            fields.add(new Field(line.substring(0, colon), line.substring(colon + 1).strip()));
        }
        UpstreamResponse head = new UpstreamResponse(Integer.parseInt(status[1]), List.copyOf(fields),
                status[0].equals("HTTP/1.1"));
        head.checkFraming();
        return head;
    }

    /** One way to delimit the body: never both a length and chunks, never two lengths that differ. */
    private void checkFraming() {
        List<String> lengths = headers.stream().filter(f -> f.name().equalsIgnoreCase("Content-Length"))
                .map(f -> f.value().strip()).distinct().toList();
        if (lengths.size() > 1 || !lengths.isEmpty() && !LENGTH.matcher(lengths.getFirst()).matches()) {
            throw invalid("its Content-Length is ambiguous or malformed");
        }
        if (!lengths.isEmpty() && header("Transfer-Encoding") != null) {
            throw invalid("it has both Content-Length and Transfer-Encoding");
        }
        if (header("Transfer-Encoding") != null && !chunked()) {
            throw invalid("its Transfer-Encoding does not end in chunked");
        }
    }

    static RequestException invalid(String why) {
        return new RequestException(ErrorCode.UPSTREAM_INVALID, "the server in the session answered what this proxy"
                + " does not pass on: " + why);
    }

    private static String printable(String s) {
        String cut = s.length() > 120 ? s.substring(0, 120) + "…" : s;
        return cut.replaceAll("[^\\x20-\\x7e]", "?");
    }
}
