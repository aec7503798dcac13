package dev.crucible.egress.proxy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.crucible.testhost.NetnsHost;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.function.Function;

/** A real HTTP origin for the egress tests: the JDK's server, port 0, one body per request. */
final class TestOrigin {
    private TestOrigin() {}

    /** On this machine's loopback: answers 200 with {@code body}'s bytes for each exchange; the caller stops it. */
    static HttpServer loopback(Function<HttpExchange, byte[]> body) throws IOException {
        return serve(HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0), body);
    }

    /** The same on a test host's address (stopped with the host if not before). */
    static HttpServer on(NetnsHost host, Function<HttpExchange, byte[]> body) throws IOException {
        return serve(host.httpServer(), body);
    }

    private static HttpServer serve(HttpServer server, Function<HttpExchange, byte[]> body) {
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
