package dev.crucible.server.ports;

import java.io.IOException;
import java.io.InputStream;

/** The first {@code length} bytes of a stream (a body with {@code Content-Length}); ending sooner is an error. */
final class BoundedInput extends InputStream {
    private final InputStream in;
    private long left;

    BoundedInput(InputStream in, long length) {
        this.in = in;
        this.left = length;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int available() throws IOException {
        return (int) Math.min(left, in.available());
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (left == 0) {
            return -1;
        }
        int n = in.read(b, off, (int) Math.min(len, left));
        if (n < 0) {
            throw new IOException("the server in the session closed the connection " + left + " bytes short of its"
                    + " Content-Length");
        }
        left -= n;
        return n;
    }
}
