package dev.crucible.server.agentsandbox;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.session.workspace.Workspace;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * The python-runtime contract of agent-sandbox ({@code examples/python-runtime-sandbox/main.py}, what its SDK speaks
 * by default), served over the pod's session:
 * <ul>
 *   <li>{@code GET /}: {@code {"status": "ok", …}} once the session is made, else 503 with why not.</li>
 *   <li>{@code POST /execute {"command"}}: the line split as {@code shlex.split} does (no shell), run in the session's
 *       sandbox from the base directory, its process group killed after {@code SANDBOX_EXEC_TIMEOUT_SECONDS} →
 *       {@code {stdout, stderr, exit_code}} (a signal's death is {@code -signal}, as Python's {@code returncode}); a
 *       command that cannot be run (bad quoting, a time-out, a refusal) is {@code exit_code} 1 with
 *       {@code stderr} "Failed to execute command: …", as the example answers.</li>
 *   <li>{@code POST /upload} (multipart, the part {@code file}, its file name the destination under the base).</li>
 *   <li>{@code GET /download/{path}}, {@code GET /list/{path}} ({@code [{name, size, type, mod_time}]}),
 *       {@code GET /exists/{path}} ({@code {path, exists}}).</li>
 * </ul>
 * A path is the base directory's ({@link BasePath}); one outside it is 403 {@code {"message": "Access denied"}}; a
 * missing file 404. Every other refusal is its error code's status with {@code {"message", "code"}}.
 */
final class PythonRuntime implements HttpHandler {
    /** The most an {@code /execute} body may hold. */
    static final long MAX_REQUEST_BYTES = 1024 * 1024;

    private final PodSession pod;
    private final long timeoutMs;

    PythonRuntime(PodSession pod, long timeoutMs) {
        this.pod = pod;
        this.timeoutMs = timeoutMs;
    }

    /** {@code /execute}'s answer. */
    record Executed(@JsonProperty("stdout") String stdout, @JsonProperty("stderr") String stderr,
            @JsonProperty("exit_code") int exitCode) {
        static Executed failed(String why) {
            return new Executed("", "Failed to execute command: " + why, 1);
        }
    }

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try {
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getRawPath();
            Route route = Route.of(path);
            if (route == null) {
                Exchanges.message(exchange, 404, "Not Found");
            } else if (!method.equals(route.method)) {
                exchange.getResponseHeaders().set("Allow", route.method);
                Exchanges.message(exchange, 405, "Method Not Allowed: " + route.method + " " + route.prefix);
            } else {
                route(exchange, route, Paths.decode(path.substring(Math.min(path.length(), route.prefix.length()))));
            }
        } catch (RequestException e) {
            refuse(exchange, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            Exchanges.message(exchange, 503, "the server is stopping");
        } catch (Exchanges.TooLarge e) {
            Exchanges.message(exchange, 413, e.getMessage());
        } catch (IllegalArgumentException e) {
            Exchanges.message(exchange, 400, e.getMessage());
        } finally {
            exchange.close();
        }
    }

    /** The contract's routes: a method and a path, or a path prefix that a path follows. */
    private enum Route {
        HEALTH("GET", "/"), EXECUTE("POST", "/execute"), UPLOAD("POST", "/upload"), DOWNLOAD("GET", "/download/"),
        LIST("GET", "/list/"), EXISTS("GET", "/exists/");

        final String method;
        final String prefix;

        Route(String method, String prefix) {
            this.method = method;
            this.prefix = prefix;
        }

        static Route of(String path) {
            for (Route r : values()) {
                boolean withPath = r.prefix.endsWith("/") && r != HEALTH;
                if (withPath ? path.startsWith(r.prefix) || path.equals(r.prefix.substring(0, r.prefix.length() - 1))
                        : path.equals(r.prefix)) {
                    return r;
                }
            }
            return null;
        }
    }

    private void route(HttpExchange exchange, Route route, String path)
            throws IOException, InterruptedException, Exchanges.TooLarge {
        switch (route) {
            case HEALTH -> health(exchange);
            case EXECUTE -> Exchanges.json(exchange, 200, execute(Exchanges.body(exchange, MAX_REQUEST_BYTES)));
            case UPLOAD -> upload(exchange);
            case DOWNLOAD, LIST, EXISTS -> {
                String inside;
                try {
                    inside = BasePath.resolve(pod.baseDir(), path);
                } catch (BasePath.Outside e) {
                    Exchanges.message(exchange, 403, "Access denied");
                    return;
                }
                switch (route) {
                    case DOWNLOAD -> download(exchange, path, inside);
                    case LIST -> list(exchange, inside);
                    default -> exists(exchange, path, inside);
                }
            }
        }
    }

    private void health(HttpExchange exchange) throws IOException {
        String notReady = pod.notReady();
        if (notReady == null) {
            Exchanges.json(exchange, 200, Map.of("status", "ok", "message", "Sandbox Runtime is active."));
        } else {
            Exchanges.json(exchange, 503, Map.of("status", "unavailable", "message", "the sandbox's session is not"
                    + " made yet: " + notReady));
        }
    }

    Executed execute(byte[] body) throws InterruptedException {
        JsonNode command;
        try {
            command = Exchanges.JSON.readTree(body).get("command");
        } catch (JacksonException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "the body is JSON: {\"command\": \"echo hello\"}");
        }
        if (command == null || !command.isString()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "command is a string: {\"command\": \"echo hello\"}");
        }
        List<String> argv;
        try {
            argv = ShellWords.split(command.asString());
        } catch (IllegalArgumentException e) {
            return Executed.failed(e.getMessage());
        }
        if (argv.isEmpty()) {
            return Executed.failed("the command is empty");
        }
        CommandResult result;
        try {
            result = pod.run(argv, timeoutMs);
        } catch (RequestException e) {
            return Executed.failed(e.getMessage());
        }
        if (result.timedOut()) {
            return Executed.failed("Command '" + argv + "' timed out after " + timeoutMs / 1000.0 + " seconds");
        }
        int exit = result.exitCode() != null ? result.exitCode() : -(result.signal() == null ? 0 : result.signal());
        return new Executed(result.stdout(), result.stderr(), exit);
    }

    private void upload(HttpExchange exchange) throws IOException, InterruptedException, Exchanges.TooLarge {
        SessionFiles files = pod.files();
        byte[] body = Exchanges.body(exchange, files.maxFileBytes() + 64 * 1024);
        Multipart.FilePart part = Multipart.field(exchange.getRequestHeaders().getFirst("Content-Type"), body, "file");
        if (part.filename() == null || part.filename().isEmpty()) {
            throw new IllegalArgumentException("the part 'file' has no filename: it names where the file goes");
        }
        String inside;
        try {
            inside = BasePath.resolve(pod.baseDir(), part.filename());
        } catch (BasePath.Outside e) {
            Exchanges.message(exchange, 403, "Access denied");
            return;
        }
        files.upload(inside, part.data());
        Exchanges.message(exchange, 200, "File '" + part.filename() + "' uploaded successfully.");
    }

    private void download(HttpExchange exchange, String asked, String inside) throws IOException, InterruptedException {
        byte[] data;
        try {
            data = pod.files().download(inside);
        } catch (RequestException e) {
            if (missing(e)) {
                Exchanges.message(exchange, 404, "File not found");
                return;
            }
            throw e;
        }
        String name = asked.substring(asked.lastIndexOf('/') + 1).replaceAll("[\\p{Cntrl}\"\\\\]", "_");
        exchange.getResponseHeaders().set("Content-Disposition", "attachment; filename=\"" + name + "\"");
        Exchanges.send(exchange, 200, "application/octet-stream", data);
    }

    private void list(HttpExchange exchange, String inside) throws IOException, InterruptedException {
        SessionFiles files = pod.files();
        Workspace.Entry self = stat(files, inside);
        if (self == null || !self.type().equals("directory")) {
            Exchanges.message(exchange, 404, "Path is not a directory");
            return;
        }
        List<Map<String, Object>> entries = new ArrayList<>();
        for (Workspace.Entry e : files.list(inside)) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("name", e.path().substring(e.path().lastIndexOf('/') + 1));
            entry.put("size", e.size());
            entry.put("type", e.type().equals("directory") ? "directory" : "file");
            entry.put("mod_time", e.modifiedMs() / 1000.0);
            entries.add(entry);
        }
        Exchanges.json(exchange, 200, entries);
    }

    private void exists(HttpExchange exchange, String asked, String inside) throws IOException, InterruptedException {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("path", asked);
        answer.put("exists", stat(pod.files(), inside) != null);
        Exchanges.json(exchange, 200, answer);
    }

    /** The entry at {@code inside}, or null when there is none. */
    static Workspace.Entry stat(SessionFiles files, String inside) {
        try {
            return files.stat(inside);
        } catch (RequestException e) {
            if (missing(e)) {
                return null;
            }
            throw e;
        }
    }

    static boolean missing(RequestException e) {
        return e.code() == ErrorCode.FILE_NOT_FOUND || e.code() == ErrorCode.NOT_A_FILE;
    }

    static void refuse(HttpExchange exchange, RequestException e) throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("message", e.getMessage());
        body.put("code", e.code().wireName());
        Exchanges.json(exchange, e.code().httpStatus(), body);
    }
}
