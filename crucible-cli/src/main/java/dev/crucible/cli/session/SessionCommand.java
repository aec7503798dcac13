package dev.crucible.cli.session;

import dev.crucible.cli.support.CliSupport;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Path;
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

    @Option(names = "--snapshot", paramLabel = "NAME",
            description = "Start the session from this snapshot (:snapshot NAME takes one; on a server they last).")
    String snapshot;

    @Option(names = "--isolation", paramLabel = "TIER", description = "namespaces or gvisor: the wall the session"
            + " runs behind, never weaker than its runtime's (default: the runtime's; docs/isolation.md).")
    String isolation;

    @Option(names = "--shell", description = "A terminal in the session instead of the REPL: a login shell, raw keys"
            + " (Ctrl-C reaches the sandbox), ~. at the start of a line to leave.")
    boolean shell;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        SessionBackend backend;
        try {
            backend = url != null ? RemoteSession.open(url, token != null ? token : System.getenv("CRUCIBLE_TOKEN"),
                    language, snapshot, isolation) : LocalSession.open(CliSupport.runtimesFile(runtimesFile), language,
                    snapshot, isolation);
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
                out.println("crucible session (" + described(backend.info()) + "); :help for commands, Ctrl-D to leave");
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
    private static boolean command(String line, SessionBackend backend, PrintWriter out) throws Exception {
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
        String[] words = line.split("\\s+", 2);
        String arg = words.length > 1 ? words[1].strip() : null;
        if (STATES.containsKey(words[0])) {
            try {
                JsonNode r = backend.state(STATES.get(words[0]), arg == null ? Map.of()
                        : Map.of(words[0].equals(":fork") ? "count" : words[0].equals(":commit") ? "tag" : "name",
                                words[0].equals(":fork") ? (Object) Integer.parseInt(arg) : arg));
                out.println(said(words[0], r));
            } catch (RuntimeException e) { // a refusal (a bad name, a session on the host's files): said, and on
                out.println("crucible: " + e.getMessage());
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
            case ":info" -> out.println("(session " + backend.info().path("id").asString() + ": "
                    + described(backend.info()) + ")");
            case ":files" -> {
                for (JsonNode f : backend.files().path("files")) {
                    out.printf("%-10s %10d  %s%n", f.path("type").asString(), f.path("size").asLong(),
                            f.path("path").asString());
                }
            }
            default -> out.println(":! LINE (a shell command in the session), :restart (fresh interpreter),"
                    + " :files (list /workspace), :info (the session: its language, tier, state), :pause, :resume,"
                    + " :fork N, :snapshot NAME, :commit TAG, :quit");
        }
        out.flush();
        return true;
    }

    /** A session's language, the tier it runs behind and its state: {@code python behind gvisor, running}. */
    static String described(JsonNode info) {
        return info.path("language").asString() + " behind " + info.path("isolation").asString("namespaces") + ", "
                + info.path("state").asString();
    }

    /** The REPL's commands that change what the session is, and their API actions. */
    private static final Map<String, String> STATES = Map.of(":pause", "pause", ":resume", "resume", ":fork", "fork",
            ":snapshot", "snapshots", ":commit", "commit");

    /** One line on what a state command did. */
    private static String said(String command, JsonNode r) {
        return switch (command) {
            case ":pause" -> "(paused; a resume brings back: " + r.path("keeps").asString() + ")";
            case ":resume" -> "(running; restored: " + r.path("restored").asString("nothing: it was running") + ")";
            case ":fork" -> "(forks: " + String.join(" ", r.path("forks").valueStream()
                    .map(f -> f.path("id").asString()).toList()) + "; this session is paused until its next cell)";
            case ":snapshot" -> "(snapshot " + r.path("name").asString() + ": " + r.path("bytes").asLong()
                    + " bytes, keeps " + r.path("keeps").asString() + ")";
            default -> "(committed " + r.path("image").asString() + " " + r.path("digest").asString() + ")";
        };
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
}
