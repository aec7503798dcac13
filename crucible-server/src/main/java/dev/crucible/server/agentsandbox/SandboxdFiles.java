package dev.crucible.server.agentsandbox;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.session.workspace.Workspace;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * sandboxd's REST filesystem (KEP-539.2, {@code packages/sandboxd/spec/filesystem/v1/filesystem.yaml}) over the pod's
 * session: {@code GET /v1/files/{path}} (a file's bytes, or a directory's {@code {path, entries}}), {@code HEAD} (its
 * headers: 404 when absent), {@code PUT} (raw or multipart {@code file}, parents made, {@code ?mode=0755}: 204),
 * {@code DELETE} ({@code ?recursive=true} for a directory that is not empty, else 409: 204), {@code GET /v1/health},
 * {@code GET /v1/metadata} (the {@code SANDBOX*} variables of the pod, nothing secret). A path is the sandbox's,
 * relative to its root ({@code workspace/main.py}), {@code %2F} decoded; one that climbs out of the root is 403. Errors
 * are {@code {code, message}} with the spec's codes.
 */
final class SandboxdFiles implements HttpHandler {
    private static final String FILES = "/v1/files/";
    private static final Pattern MODE = Pattern.compile("^0[0-7]{3}$");

    private final PodSession pod;
    private final Map<String, String> metadata;
    private final long started = System.nanoTime();

    SandboxdFiles(PodSession pod, Map<String, String> metadata) {
        this.pod = pod;
        this.metadata = Map.copyOf(metadata);
    }

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try {
            String path = exchange.getRequestURI().getRawPath();
            String method = exchange.getRequestMethod();
            if (path.equals("/v1/health") && method.equals("GET")) {
                health(exchange);
            } else if (path.equals("/v1/metadata") && method.equals("GET")) {
                Exchanges.json(exchange, 200, Map.of("env", metadata));
            } else if (path.startsWith(FILES) && path.length() > FILES.length()) {
                files(exchange, method, Paths.decode(path.substring(FILES.length())));
            } else {
                error(exchange, 404, "NOT_FOUND", "no route " + method + " " + path + "; sandboxd serves"
                        + " /v1/files/{path}, /v1/health and /v1/metadata");
            }
        } catch (RequestException e) {
            ErrorCode c = e.code();
            String code = c == ErrorCode.FILE_NOT_FOUND ? "NOT_FOUND" : c.httpStatus() == 413 ? "TOO_LARGE"
                    : c.httpStatus() < 500 ? "INVALID_ARGUMENT" : "UNAVAILABLE";
            error(exchange, c.httpStatus(), code, e.getMessage());
        } catch (Exchanges.TooLarge e) {
            error(exchange, 413, "TOO_LARGE", e.getMessage());
        } catch (IllegalArgumentException e) {
            error(exchange, 400, "INVALID_ARGUMENT", e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            error(exchange, 503, "UNAVAILABLE", "the server is stopping");
        } finally {
            exchange.close();
        }
    }

    private void health(HttpExchange exchange) throws IOException {
        String notReady = pod.notReady();
        if (notReady != null) {
            error(exchange, 503, "UNAVAILABLE", "the sandbox's session is not made yet: " + notReady);
            return;
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", "ok");
        body.put("uptime_seconds", (System.nanoTime() - started) / 1_000_000_000L);
        Exchanges.json(exchange, 200, body);
    }

    private void files(HttpExchange exchange, String method, String asked)
            throws IOException, InterruptedException, Exchanges.TooLarge {
        String inside;
        try {
            inside = BasePath.resolve("/", asked);
        } catch (BasePath.Outside e) {
            error(exchange, 403, "PERMISSION_DENIED", "Path traversal outside sandbox root is forbidden.");
            return;
        }
        SessionFiles files = pod.files();
        Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
        switch (method) {
            case "GET", "HEAD" -> read(exchange, files, inside);
            case "PUT" -> write(exchange, files, inside, query.get("mode"));
            case "DELETE" -> delete(exchange, files, inside, Boolean.parseBoolean(query.get("recursive")));
            default -> {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD, PUT, DELETE");
                error(exchange, 405, "METHOD_NOT_ALLOWED", method + " is not a method of /v1/files/{path}");
            }
        }
    }

    private void read(HttpExchange exchange, SessionFiles files, String inside) throws IOException {
        Workspace.Entry self = PythonRuntime.stat(files, inside);
        if (self == null) {
            error(exchange, 404, "NOT_FOUND", inside + " does not exist");
        } else if (self.type().equals("directory")) {
            List<Map<String, Object>> entries = new ArrayList<>();
            for (Workspace.Entry e : files.list(inside)) {
                // a listing's entries carry no mode: each one's own stat does (null when it went meanwhile)
                Workspace.Entry full = PythonRuntime.stat(files, (inside.equals("/") ? "" : inside) + "/"
                        + e.path().substring(e.path().lastIndexOf('/') + 1));
                entries.add(entry(full != null ? full : e));
            }
            Exchanges.json(exchange, 200, Map.of("path", inside, "entries", entries));
        } else {
            Exchanges.send(exchange, 200, "application/octet-stream", files.download(inside));
        }
    }

    private static Map<String, Object> entry(Workspace.Entry e) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("name", e.path().substring(e.path().lastIndexOf('/') + 1));
        entry.put("size", e.size());
        entry.put("type", e.type().equals("directory") ? "directory" : "file");
        entry.put("modified_at", Instant.ofEpochMilli(e.modifiedMs()).toString());
        if (e.mode() != 0) {
            entry.put("mode", String.format(Locale.ROOT, "%04o", e.mode() & 07777));
        }
        return entry;
    }

    private void write(HttpExchange exchange, SessionFiles files, String inside, String mode)
            throws IOException, InterruptedException, Exchanges.TooLarge {
        if (mode != null && !MODE.matcher(mode).matches()) {
            throw new IllegalArgumentException("mode is octal permission bits such as 0644 or 0755, not '" + mode + "'");
        }
        if (inside.equals("/")) {
            throw new IllegalArgumentException("/ is a directory: PUT names a file");
        }
        byte[] body = Exchanges.body(exchange, files.maxFileBytes() + 64 * 1024);
        String type = exchange.getRequestHeaders().getFirst("Content-Type");
        byte[] data = type != null && type.toLowerCase(Locale.ROOT).startsWith("multipart/form-data")
                ? Multipart.field(type, body, "file").data() : body;
        files.upload(inside, data);
        if (mode != null && !mode.equals("0644")) {
            pod.run(List.of("chmod", mode.substring(1), inside), 10_000);
        }
        Exchanges.send(exchange, 204, null, new byte[0]);
    }

    private void delete(HttpExchange exchange, SessionFiles files, String inside, boolean recursive)
            throws IOException {
        Workspace.Entry self = PythonRuntime.stat(files, inside);
        if (self == null) {
            error(exchange, 404, "NOT_FOUND", inside + " does not exist");
        } else if (inside.equals("/") || inside.equals("/workspace")) {
            error(exchange, 409, "CONFLICT", inside + " cannot be removed: the sandbox needs it");
        } else if (self.type().equals("directory") && !recursive && !files.list(inside).isEmpty()) {
            error(exchange, 409, "CONFLICT", inside + " is a directory that is not empty: ?recursive=true removes it"
                    + " with everything in it");
        } else {
            files.delete(inside);
            Exchanges.send(exchange, 204, null, new byte[0]);
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> query = new LinkedHashMap<>();
        if (raw != null) {
            for (String pair : raw.split("&")) {
                int eq = pair.indexOf('=');
                query.put(Paths.decode(eq < 0 ? pair : pair.substring(0, eq)), eq < 0 ? "" : Paths.decode(
                        pair.substring(eq + 1)));
            }
        }
        return query;
    }

    private static void error(HttpExchange exchange, int status, String code, String message) throws IOException {
        Map<String, String> body = new LinkedHashMap<>();
        body.put("code", code);
        body.put("message", message);
        Exchanges.json(exchange, status, body);
    }
}
