package dev.crucible.server.agentsandbox;

import dev.crucible.TestDirs;
import dev.crucible.TestHost;
import dev.crucible.server.ServerConfig;
import dev.crucible.server.services.Services;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.awaitility.Awaitility;

/**
 * A real pod on the shared test engine: the services a server starts (a data directory of their own, no spares) and
 * {@link AgentSandbox} on free loopback ports, its session made before the first test.
 */
final class PodUnderTest implements AutoCloseable {
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    final Services services;
    final AgentSandbox sandbox;

    PodUnderTest(Map<String, String> env) throws IOException {
        ServerConfig config = ServerConfig.defaults().withDataDir(TestDirs.create("crucible-agent-sandbox-"));
        config = config.withSessions(config.sessions().withSpares(0));
        services = Services.start(TestHost.crucible(), config.sessions(), config.turns(), "pod");
        sandbox = AgentSandbox.start(services.sessions(), AgentSandbox.Settings.of("127.0.0.1",
                new AgentSandboxPorts(0, 0, 0), env, config.sessions().maxLifetime().toSeconds()));
        Awaitility.await().atMost(Duration.ofMinutes(2)).until(sandbox::ready);
    }

    String base() {
        return "http://127.0.0.1:" + sandbox.runtimePort();
    }

    /** sandboxd's REST filesystem: {@code method path} with {@code body} (null: none). */
    HttpResponse<String> rest(String method, String path, String body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + sandbox.restPort() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(base() + path)).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> post(String path, String contentType, String body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(base() + path)).header("Content-Type", contentType)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> execute(String command) throws Exception {
        return post("/execute", "application/json", Exchanges.JSON.writeValueAsString(Map.of("command", command)));
    }

    HttpResponse<String> upload(String filename, String content) throws Exception {
        String boundary = "crucible-test-boundary";
        String body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + filename
                + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n--" + boundary + "--\r\n";
        return post("/upload", "multipart/form-data; boundary=" + boundary, body);
    }

    @Override
    public void close() {
        sandbox.close();
        services.close();
    }
}
