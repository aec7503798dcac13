package dev.crucible.server.ports;

import java.io.IOException;
import java.io.InputStream;

/**
 * A chunked body ({@code Transfer-Encoding: chunked}) as its plain bytes: sizes and extensions read and dropped,
 * trailers read to the blank line and dropped. Malformed framing is an {@link IOException}: the answer is cut, never
 * passed on wrong.
 */
final class ChunkedInput extends InputStream {
    /** A size line longer than this is not one (extensions included). */
    private static final int LINE_LIMIT = 4096;

    private final InputStream in;
    private long left; // of the current chunk
    private boolean done;

    ChunkedInput(InputStream in) {
        this.in = in;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (done) {
            return -1;
        }
        if (left == 0) {
            left = nextSize();
            if (left == 0) {
                while (!line().isEmpty()) { // trailers: dropped
                }
                done = true;
                return -1;
            }
        }
        int n = in.read(b, off, (int) Math.min(len, left));
        if (n < 0) {
            throw new IOException("the server in the session ended its chunked answer in the middle of a chunk");
        }
        left -= n;
        if (left == 0 && !line().isEmpty()) {
            throw new IOException("the server in the session sent a chunk longer than its size");
        }
        return n;
    }

    private long nextSize() throws IOException {
        String line = line();
        int semi = line.indexOf(';');
        String hex = (semi < 0 ? line : line.substring(0, semi)).strip();
        if (!hex.matches("[0-9A-Fa-f]{1,15}")) {
            throw new IOException("the server in the session sent a malformed chunk size");
        }
        return Long.parseLong(hex, 16);
    }

    /** One line without its CRLF (a bare LF is taken too). */
    private String line() throws IOException {
        StringBuilder s = new StringBuilder();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("the server in the session ended its chunked answer early");
            }
            if (s.length() == LINE_LIMIT) {
                throw new IOException("the server in the session sent a chunk line longer than " + LINE_LIMIT);
            }
            if (c != '\r') {
                s.append((char) c);
            }
        }
        return s.toString();
    }
}
