package dev.crucible.cli;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.server.CrucibleServer;
import dev.crucible.server.ServerConfig;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * The JDK AOT cache's training run ({@code ./crucible} makes the cache once per build with it): what the short
 * commands and the server load and link on their way to a first answer. A {@code crucible run} of a line of Python,
 * then a server on a port of its own (a data directory of its own, deleted after) answering a run, a session's cell,
 * its health and metrics, closed. Hidden: not a command for users.
 */
@Command(name = "train-startup", hidden = true, description = "Train the start-up cache (./crucible runs it).")
public final class TrainStartupCommand implements Callable<Integer> {
    @Override
    public Integer call() throws Exception {
        Path dir = Files.createTempDirectory("crucible-train-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        try { // the sandboxes reach the data directory inside it
            Path hello = Files.writeString(dir.resolve("hello.py"), "print(sum(range(10)))\n");
            CrucibleCommand.execute("run", "--json", hello.toString());
            ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dir.resolve("data"))
                    .withPool(Map.of("python", 1));
            return CliSupport.withEngine(new PrintWriter(System.err, true), null, engine -> {
                try (CrucibleServer server = CrucibleServer.start(config, engine)) {
                    serve(URI.create("http://127.0.0.1:" + server.port() + "/"));
                }
                return 0;
            });
        } finally {
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** The requests a first user of a server makes. */
    private static void serve(URI base) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        String run = "{\"language\": \"python\", \"code\": \"print(1)\"}";
        send(http, base, "POST", "v1/execute", run);
        send(http, base, "GET", "healthz", null);
        send(http, base, "GET", "metrics", null);
        String created = send(http, base, "POST", "v1/sessions", "{\"language\": \"python\"}");
        String id = created.replaceFirst("(?s).*\"id\":\"([^\"]+)\".*", "$1");
        send(http, base, "POST", "v1/sessions/" + id + "/execute", "{\"code\": \"x = 41\\nx + 1\"}");
        send(http, base, "DELETE", "v1/sessions/" + id, null);
    }

    private static String send(HttpClient http, URI base, String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path));
        if (json != null) {
            request.header("Content-Type", "application/json");
        } else {
            request.header("X-Crucible-Request", "1");
        }
        return http.send(request.method(method, json == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }
}
