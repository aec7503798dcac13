package dev.crucible.cli.bench;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * One keep-alive HTTP/1.1 connection of {@code crucible bench}, used by one worker at a time: a blocking write and read on
 * the caller's own thread. The load generator shares the machine with the server it measures; the JDK's HttpClient
 * hands every request between three threads (caller, selector, worker), and that CPU was taken from the server. Plain
 * {@code http} only; the bench uses the JDK client for anything else.
 */
final class BenchConnection implements Closeable {
    record Response(int status, String body) {}

    /** The connection ended before any byte of the answer: the server had closed it (idle), the request is unread. */
    static final class Stale extends IOException {
        Stale(String message) {
            super(message);
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final String host;
    private boolean open = true;

    BenchConnection(URI uri) throws IOException {
        int port = uri.getPort() > 0 ? uri.getPort() : 80;
        this.socket = new Socket();
        socket.connect(new InetSocketAddress(uri.getHost(), port), 5_000);
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(120_000);
        this.in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
        this.out = socket.getOutputStream();
        this.host = uri.getHost() + ":" + port;
    }

    /** POSTs a JSON body and reads the whole answer (Content-Length or chunked). */
    Response post(String path, String token, byte[] body) throws IOException {
        StringBuilder head = new StringBuilder(160).append("POST ").append(path).append(" HTTP/1.1\r\nHost: ")
                .append(host).append("\r\nContent-Type: application/json\r\nContent-Length: ").append(body.length)
                .append("\r\n");
        if (token != null) {
            head.append("Authorization: Bearer ").append(token).append("\r\n");
        }
        try {
            out.write(head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
        } catch (IOException e) {
            throw new Stale("the connection is gone: " + e.getMessage());
        }
        int first;
        try {
            first = in.read();
        } catch (IOException e) {
            throw new Stale("the connection is gone: " + e.getMessage());
        }
        if (first < 0) {
            throw new Stale("the server closed the connection");
        }
        try {
            return answer((char) first + line());
        } catch (NumberFormatException e) {
            throw new IOException("a malformed answer: " + e.getMessage());
        }
    }

    private Response answer(String statusLine) throws IOException {
        String[] parts = statusLine.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP/1.1 answer: " + statusLine);
        }
        int status = Integer.parseInt(parts[1]);
        if (status >= 100 && status < 200) { // an interim answer: skip its headers, the real one follows
            while (!line().isEmpty()) {
                // headers of the interim answer
            }
            return answer(line());
        }
        long length = status == 204 || status == 304 ? 0 : -1;
        boolean chunked = false;
        for (String header = line(); !header.isEmpty(); header = line()) {
            int colon = header.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = header.substring(colon + 1).trim();
            if (name.equals("content-length")) {
                length = Long.parseLong(value);
            } else if (name.equals("transfer-encoding") && value.toLowerCase(Locale.ROOT).contains("chunked")) {
                chunked = true;
            } else if (name.equals("connection") && value.equalsIgnoreCase("close")) {
                open = false;
            }
        }
        ByteArrayOutputStream content = new ByteArrayOutputStream();
        if (chunked) {
            for (long size = Long.parseLong(line().split(";", 2)[0].trim(), 16); size > 0;
                    size = Long.parseLong(line().split(";", 2)[0].trim(), 16)) {
                copy(size, content);
                if (!line().isEmpty()) {
                    throw new IOException("a chunk not followed by CRLF");
                }
            }
            while (!line().isEmpty()) {
                // trailers
            }
        } else if (length >= 0) {
            copy(length, content);
        } else {
            throw new IOException("an answer without a length"); // the bench's server always sends one
        }
        return new Response(status, content.toString(StandardCharsets.UTF_8));
    }

    private void copy(long n, ByteArrayOutputStream to) throws IOException {
        byte[] buffer = new byte[8192];
        while (n > 0) {
            int r = in.read(buffer, 0, (int) Math.min(buffer.length, n));
            if (r < 0) {
                throw new EOFException("the answer ended early");
            }
            to.write(buffer, 0, r);
            n -= r;
        }
    }

    /** One header line without its CRLF. */
    private String line() throws IOException {
        StringBuilder s = new StringBuilder(64);
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new EOFException("the connection closed");
            }
            if (s.length() > 64 * 1024) {
                throw new IOException("a header line over 64 KiB");
            }
            if (c != '\r') {
                s.append((char) c);
            }
        }
        return s.toString();
    }

    /** Whether the server keeps the connection for another request. */
    boolean reusable() {
        return open;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do
        }
    }
}
