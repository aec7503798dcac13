package dev.crucible.egress;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.function.Function;

/** A real HTTP origin for the egress tests: the JDK's server on {@code bind}, port 0, one body per request. */
final class TestOrigin {
    private TestOrigin() {}

    /** Starts a server answering 200 with {@code body}'s bytes for each exchange; the caller stops it. */
    static HttpServer start(String bind, Function<HttpExchange, byte[]> body) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getByName(bind), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            byte[] bytes = body.apply(exchange);
            exchange.sendResponseHeaders(200, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
        return server;
    }
}
