package dev.crucible.cli.session;

import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/** A session on a Crucible server. */
final class RemoteSession implements SessionBackend {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final URI base;
    private final String token;
    private String id;

    private RemoteSession(URI base, String token) {
        this.base = base;
        this.token = token;
    }

    static RemoteSession open(URI url, String token, String language, String snapshot, String isolation) {
        RemoteSession remote = new RemoteSession(url, token);
        try {
            Map<String, String> body = new LinkedHashMap<>();
            body.put(snapshot != null ? "snapshot" : "language", snapshot != null ? snapshot : language);
            if (isolation != null) {
                body.put("isolation", isolation);
            }
            remote.id = remote.call("POST", "/v1/sessions", body).get("id").asString();
            return remote;
        } catch (IOException | InterruptedException e) {
            throw new CliSupport.Failure(ExitCodes.SANDBOX_UNAVAILABLE, "cannot reach " + url + ": " + e);
        }
    }

    private JsonNode call(String method, String path, Object body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofMinutes(15));
        if (token != null && !token.isBlank()) {
            b.header("Authorization", "Bearer " + token);
        }
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(CliSupport.json().writeValueAsBytes(body)));
        if (body != null) {
            b.header("Content-Type", "application/json");
        } else {
            b.header("X-Crucible-Request", "1"); // a POST without JSON: proof that no browser sent it
        }
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        JsonNode node = CliSupport.json().readTree(r.body().isEmpty() ? "{}" : r.body());
        if (r.statusCode() >= 400) {
            throw new CliSupport.Failure(ExitCodes.INVALID_REQUEST, r.statusCode() + " "
                    + node.path("error").path("message").asString(r.body()));
        }
        return node;
    }

    @Override
    public JsonNode execute(String code, String mode) throws Exception {
        return call("POST", "/v1/sessions/" + id + "/execute", Map.of("code", code, "mode", mode));
    }

    @Override
    public void interrupt() {
        try {
            call("POST", "/v1/sessions/" + id + "/interrupt", Map.of());
        } catch (IOException | InterruptedException | RuntimeException e) {
            // nothing to interrupt any more
        }
    }

    @Override
    public JsonNode info() throws Exception {
        return call("GET", "/v1/sessions/" + id, null);
    }

    @Override
    public void restart() throws Exception {
        call("POST", "/v1/sessions/" + id + "/restart", Map.of());
    }

    @Override
    public JsonNode files() throws Exception {
        return call("GET", "/v1/sessions/" + id + "/files", null);
    }

    @Override
    public JsonNode command(String line) throws Exception {
        return call("POST", "/v1/sessions/" + id + "/commands", Map.of("command", line));
    }

    @Override
    public JsonNode state(String action, Map<String, Object> body) throws Exception {
        return call("POST", "/v1/sessions/" + id + "/" + action, body);
    }

    @Override
    public ShellAttach.Opener shell() {
        return ShellAttach.remote(http, base, token, id, this::call);
    }

    @Override
    public void close() {
        try {
            call("DELETE", "/v1/sessions/" + id, null);
        } catch (IOException | InterruptedException | RuntimeException e) {
            // the server will reap it
        }
    }
}
