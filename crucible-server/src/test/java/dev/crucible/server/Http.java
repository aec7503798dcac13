package dev.crucible.server;

import dev.crucible.TestDirs;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A small JDK HttpClient wrapper for the tests: the real server on a real port. */
record Http(HttpClient client, String base, String token) {
    /**
     * The server's defaults on a temp data dir, without spare sessions: a test that counts the sandboxes, cgroups and
     * session uids left while its server runs would find the spare ({@code SessionSparesTest} and the ITs run with it).
     */
    static ServerConfig config() {
        ServerConfig config = ServerConfig.defaults().withDataDir(TestDirs.create("crucible-test-data-"));
        return config.withSessions(config.sessions().withSpares(0));
    }

    static Http to(CrucibleServer server, String token) {
        return new Http(HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build(),
                "http://127.0.0.1:" + server.port(), token);
    }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).GET());
    }

    HttpResponse<String> postJson(String path, String json) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)));
    }

    HttpResponse<String> put(String path, byte[] body) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
    }

    HttpResponse<String> delete(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(base + path)).DELETE());
    }

    HttpResponse<byte[]> bytes(String path) throws IOException, InterruptedException {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(base + path)).GET();
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        return client.send(builder.timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    HttpResponse<String> send(HttpRequest.Builder builder) throws IOException, InterruptedException {
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        return client.send(builder.timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
