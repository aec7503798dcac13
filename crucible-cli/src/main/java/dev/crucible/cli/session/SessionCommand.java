package dev.crucible.cli.session;

import dev.crucible.Crucible;
import dev.crucible.error.RequestException;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.server.ServerConfig;
import dev.crucible.server.services.Services;
import dev.crucible.session.SessionConfig;
import dev.crucible.session.SessionManager;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.UserInterruptException;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible session}: an interactive REPL in a sandboxed session, against the local engine or a server, with
 * line editing and history (JLine). Incomplete input continues on the next line; Ctrl-C interrupts a running cell;
 * {@code :! LINE} runs a shell command in the session's sandbox; Ctrl-D or {@code :quit} ends.
 */
@Command(name = "session", mixinStandardHelpOptions = true,
        description = "An interactive REPL in a sandboxed session (local engine, or --url a server).")
public final class SessionCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = {"-l", "--language"}, paramLabel = "LANG", description = "python (default) or javascript.")
    String language = "python";

    @Option(names = "--url", paramLabel = "URL", description = "A Crucible server, e.g. http://127.0.0.1:8080.")
    URI url;

    @Option(names = "--token", paramLabel = "TOKEN", description = "Bearer token for --url (env CRUCIBLE_TOKEN).")
    String token;

    @Option(names = "--timeout-ms", paramLabel = "MS", description = "Per-cell timeout (default 30000).")
    Long timeoutMs;

    @Option(names = "--history", paramLabel = "FILE", description = "History file (default ~/.crucible_history).")
    Path history;

    @Option(names = "--runtimes", paramLabel = "FILE", description = "A runtimes TOML file (env CRUCIBLE_RUNTIMES).")
    Path runtimesFile;

    @Option(names = "--shell", description = "A terminal in the session instead of the REPL: a login shell, raw keys"
            + " (Ctrl-C reaches the sandbox), ~. at the start of a line to leave.")
    boolean shell;

    /** Where cells go: the local engine or a server. */
    interface Backend extends AutoCloseable {
        JsonNode execute(String code, String mode) throws Exception;

        void interrupt();

        void restart() throws Exception;

        JsonNode files() throws Exception;

        /** Runs a shell line in the session's sandbox, beside its interpreter (POST …/commands). */
        JsonNode command(String line) throws Exception;

        /** A login shell on a terminal of the session's sandbox. */
        ShellAttach.Opener shell();

        @Override
        void close();
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        Backend backend;
        try {
            backend = url != null ? Remote.open(url, token != null ? token : System.getenv("CRUCIBLE_TOKEN"), language)
                    : Local.open(CliSupport.runtimesFile(runtimesFile), language);
        } catch (CliSupport.Failure f) {
            return CliSupport.fail(err, f);
        }
        if (shell) {
            try (backend; Terminal terminal = TerminalBuilder.builder().system(true).build()) {
                return ShellAttach.run(terminal, backend.shell());
            }
        }
        try (backend; Terminal terminal = TerminalBuilder.builder().system(true).dumb(true).build()) {
            LineReader reader = LineReaderBuilder.builder().terminal(terminal).appName("crucible")
                    .variable(LineReader.HISTORY_FILE, history != null ? history
                            : Path.of(System.getProperty("user.home"), ".crucible_history"))
                    .build();
            PrintWriter out = terminal.writer();
            if (!terminal.getType().startsWith("dumb")) {
                out.println("crucible session (" + language + "); :help for commands, Ctrl-D to leave");
            }
            StringBuilder pending = new StringBuilder();
            while (true) {
                String line;
                try {
                    line = reader.readLine(pending.isEmpty() ? ">>> " : "... ");
                } catch (UserInterruptException e) {
                    pending.setLength(0);
                    continue;
                } catch (EndOfFileException e) {
                    break;
                }
                if (pending.isEmpty() && line.strip().startsWith(":")) {
                    if (!command(line.strip(), backend, out)) {
                        break;
                    }
                    continue;
                }
                if (!pending.isEmpty()) {
                    pending.append('\n');
                }
                pending.append(line);
                JsonNode r;
                Terminal.SignalHandler previous = terminal.handle(Terminal.Signal.INT, s -> backend.interrupt());
                try {
                    r = backend.execute(pending.toString(), "auto");
                } catch (RuntimeException e) {
                    out.println("crucible: " + e.getMessage());
                    pending.setLength(0);
                    continue;
                } finally {
                    terminal.handle(Terminal.Signal.INT, previous);
                }
                String status = r.path("status").asString("");
                if (status.equals("incomplete") && !line.isBlank()) {
                    continue;
                }
                pending.setLength(0);
                show(r, out);
            }
            return 0;
        }
    }

    /** A REPL command; false ends the session. */
    private static boolean command(String line, Backend backend, PrintWriter out) throws Exception {
        if (line.startsWith(":!")) {
            JsonNode r;
            try {
                r = backend.command(line.substring(2).strip());
            } catch (RuntimeException e) { // a refusal (a bad line, too many commands): said, and the REPL goes on
                out.println("crucible: " + e.getMessage());
                out.flush();
                return true;
            }
            out.print(r.path("stdout").asString(""));
            out.print(r.path("stderr").asString(""));
            if (r.path("timed_out").asBoolean(false)) {
                out.println("[timed out: killed]");
            } else if (r.hasNonNull("signal")) {
                out.println("[killed by signal " + r.get("signal").asInt() + "]");
            } else if (r.path("exit_code").asInt(0) != 0) {
                out.println("[exit " + r.get("exit_code").asInt() + "]");
            }
            out.flush();
            return true;
        }
        switch (line) {
            case ":quit", ":q", ":exit" -> {
                return false;
            }
            case ":restart" -> {
                backend.restart();
                out.println("(restarted: variables cleared, files kept)");
            }
            case ":files" -> {
                for (JsonNode f : backend.files().path("files")) {
                    out.printf("%-10s %10d  %s%n", f.path("type").asString(), f.path("size").asLong(),
                            f.path("path").asString());
                }
            }
            default -> out.println(":! LINE (a shell command in the session), :restart (fresh interpreter),"
                    + " :files (list /workspace), :quit");
        }
        out.flush();
        return true;
    }

    static void show(JsonNode r, PrintWriter out) {
        if (r.path("restarted").asBoolean(false)) {
            out.println("(the interpreter was restarted; variables are gone)");
        }
        out.print(r.path("stdout").asString(""));
        out.print(r.path("stderr").asString(""));
        if (r.hasNonNull("result")) {
            out.println(r.get("result").asString());
        }
        for (JsonNode d : r.path("display")) {
            String mime = d.path("mime").asString("");
            out.println(mime.startsWith("text/") ? d.path("data").asString("") : "[" + mime + ", "
                    + d.path("data").asString("").length() + " base64 chars]");
        }
        if (r.hasNonNull("error")) {
            JsonNode e = r.get("error");
            String traceback = e.path("traceback").asString("");
            out.println(traceback.isBlank() ? e.path("name").asString() + ": " + e.path("message").asString()
                    : traceback.stripTrailing());
        }
        out.flush();
    }

    /** The local engine, with a session kept in a temporary data directory removed at the end. */
    static final class Local implements Backend {
        private final Services services;
        private final SessionManager sessions;
        private final String id;
        private final Path data;

        private Local(Services services, String id, Path data) {
            this.services = services;
            this.sessions = services.sessions();
            this.id = id;
            this.data = data;
        }

        static Local open(Path runtimes, String language) {
            Crucible engine = CliSupport.start(runtimes);
            Services services = null;
            try {
                Path data = Files.createTempDirectory("crucible-session-");
                services = Services.start(engine, SessionConfig.defaults(data), ServerConfig.defaults().turns());
                String id = services.sessions().create("", new SessionManager.CreateRequest(language, null, null, null))
                        .id();
                return new Local(services, id, data);
            } catch (RequestException e) {
                if (services != null) {
                    services.close();
                }
                engine.close();
                int exit = CliSupport.exitCodeOf(e);
                throw new CliSupport.Failure(exit, (exit == ExitCodes.SANDBOX_ERROR ? "cannot start a session: " : "")
                        + e.getMessage());
            } catch (IOException | InterruptedException e) {
                if (services != null) {
                    services.close();
                }
                engine.close();
                throw new CliSupport.Failure(ExitCodes.SANDBOX_ERROR, "cannot start a session: " + e.getMessage());
            }
        }

        @Override
        public JsonNode execute(String code, String mode) throws Exception {
            return CliSupport.json().valueToTree(sessions.execute("", id, code, mode, null));
        }

        @Override
        public void interrupt() {
            sessions.interrupt("", id);
        }

        @Override
        public void restart() throws Exception {
            sessions.restart("", id);
        }

        @Override
        public JsonNode files() {
            return CliSupport.json().valueToTree(Map.of("files", sessions.files("", id).list("")));
        }

        @Override
        public JsonNode command(String line) throws Exception {
            return CliSupport.json().valueToTree(sessions.command("", id,
                    dev.crucible.session.process.CommandRequest.shell(line)));
        }

        @Override
        public ShellAttach.Opener shell() {
            return ShellAttach.local(sessions.processes("", id));
        }

        @Override
        public void close() {
            try {
                sessions.delete("", id);
            } catch (RuntimeException e) {
                // best effort
            }
            services.close();
            services.engine().close();
            try (var walk = Files.walk(data)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a temporary directory
            }
        }
    }

    /** A session on a Crucible server. */
    static final class Remote implements Backend {
        private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        private final URI base;
        private final String token;
        private String id;

        private Remote(URI base, String token) {
            this.base = base;
            this.token = token;
        }

        static Remote open(URI url, String token, String language) {
            Remote remote = new Remote(url, token);
            try {
                remote.id = remote.call("POST", "/v1/sessions", Map.of("language", language)).get("id").asString();
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
}
