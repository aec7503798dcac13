package dev.crucible.server.tools;

import dev.crucible.client.ToolOutcome;
import dev.crucible.client.Tools;
import dev.crucible.error.RequestException;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.server.http.RuntimeInfo;
import dev.crucible.session.SessionManager;
import dev.crucible.session.edit.EditFiles;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.workspace.Workspace;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Runs the tools of {@link Tools} as a model calls them — for {@code POST /v1/tools/call} and for the MCP endpoints —
 * and words the outcome for a model: what the program printed, then what went wrong and what to do. A mistake of the
 * model (unknown tool, arguments that are not JSON, a missing {@code code}, an unknown session) is an error outcome,
 * never an exception. Thread-safe.
 */
public final class ToolDispatcher {
    private static final System.Logger LOG = System.getLogger("crucible.tools");
    /** What a model gets at most from one stream: the head and the tail, the middle cut. */
    static final int MAX_TEXT = 20_000;

    /** Runs one stateless program (through the server's admission, or straight on the executor). */
    public interface Runner {
        /** Runs {@code request} for {@code owner} (whose turns it takes). */
        ExecuteResult run(String owner, ExecuteRequest request) throws Exception;
    }

    /** The session that session tools use when the model names none. */
    public interface DefaultSession {
        /** Its id; may start it. Null when there is none and none can be started. */
        String id(String owner) throws InterruptedException;
    }

    private final Executor executor;
    private final SessionManager sessions;
    private final Runner runner;
    private final JsonMapper json;
    private final EditTools edit;
    private final ShellTool shell;
    private final BashTool bash;

    /** @param runner how {@code run_code} runs its program (the server's admission, or the executor itself) */
    public ToolDispatcher(Executor executor, SessionManager sessions, Runner runner, JsonMapper json) {
        this.executor = executor;
        this.sessions = sessions;
        this.runner = runner;
        this.json = json;
        this.edit = new EditTools(json);
        this.shell = new ShellTool(sessions, json);
        this.bash = new BashTool(sessions, json);
    }

    /** The available languages, python first: the enums of the tool schemas. */
    public List<String> languages() {
        return Tools.pythonFirst(executor.runtimes().list().stream().filter(LanguageRuntime::available)
                .map(LanguageRuntime::language).toList());
    }

    /**
     * @param owner     whose sessions the call may use
     * @param arguments a JSON object, or the JSON text of one as a model wrote it; null means none
     */
    public ToolOutcome call(String owner, String name, JsonNode arguments, DefaultSession defaultSession)
            throws InterruptedException {
        if (name == null || name.isBlank()) {
            return ToolOutcome.error("The tool call has no name. Tools: " + toolNames() + ".");
        }
        JsonNode args = arguments == null || arguments.isNull() ? json.createObjectNode() : arguments;
        if (args.isString()) {
            String text = args.asString().strip();
            try {
                args = text.isEmpty() ? json.createObjectNode() : json.readTree(text);
            } catch (JacksonException e) {
                return ToolOutcome.error("The arguments of " + name + " are not valid JSON (" + e.getOriginalMessage()
                        .lines().findFirst().orElse("") + "). Send a JSON object, e.g. {\"code\": \"print(1 + 1)\"}.");
            }
        }
        if (!args.isObject()) {
            return ToolOutcome.error("The arguments of " + name + " must be a JSON object, e.g. {\"code\": \"print(1)\"}.");
        }
        try {
            return switch (name) {
                case Tools.RUN_CODE -> runCode(owner, args);
                case Tools.LIST_RUNTIMES -> listRuntimes();
                case Tools.CREATE_SESSION -> createSession(owner, args);
                case Tools.RUN_IN_SESSION -> runInSession(owner, args, defaultSession);
                case Tools.WRITE_FILE -> writeFile(owner, args, defaultSession);
                case Tools.READ_FILE -> readFile(owner, args, defaultSession);
                case Tools.LIST_FILES -> listFiles(owner, args, defaultSession);
                case Tools.CLOSE_SESSION -> closeSession(owner, args, defaultSession);
                case Tools.TEXT_EDITOR -> edit.textEditor(filesOf(owner, args, defaultSession), args);
                case Tools.APPLY_PATCH -> edit.applyPatch(filesOf(owner, args, defaultSession), args);
                case Tools.SHELL -> shell.call(owner, sessionOf(owner, args, defaultSession), args);
                case Tools.BASH -> bash.call(owner, sessionOf(owner, args, defaultSession), args);
                default -> ToolOutcome.error("There is no tool named '" + name + "'. Tools: " + toolNames() + ".");
            };
        } catch (RequestException e) {
            return ToolOutcome.error(e.getMessage() + (e.retryAfterSeconds() > 0 ? "; try again in " + e.retryAfterSeconds() + " s." : ""));
        } catch (IllegalArgumentException e) {
            return ToolOutcome.error(e.getMessage());
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            LOG.log(System.Logger.Level.ERROR, "tool " + name + " failed", e);
            return ToolOutcome.error("Crucible failed to run " + name + " (an internal error, logged on the server).");
        }
    }

    private static String toolNames() {
        return String.join(", ", Tools.of(Tools.Set.ALL, null).stream().map(Tools.Tool::name).toList());
    }

    private static String required(JsonNode args, String field, String tool, String what) {
        JsonNode value = args.get(field);
        if (value == null || value.isNull()) {
            throw new IllegalArgumentException(tool + " needs '" + field + "': " + what + ".");
        }
        if (!value.isString()) {
            throw new IllegalArgumentException("'" + field + "' of " + tool + " must be a string: " + what + ".");
        }
        return value.asString();
    }

    /** The field as text (a non-string value as its JSON), or null when absent. */
    static String optional(JsonNode args, String field) {
        JsonNode value = args.get(field);
        return value == null || value.isNull() ? null : value.isString() ? value.asString() : value.toString();
    }

    private ToolOutcome runCode(String owner, JsonNode args) throws Exception {
        String code = Tools.stripFences(required(args, "code", Tools.RUN_CODE, "the program to run, as a string"));
        if (code.isBlank()) {
            return ToolOutcome.error("run_code got empty code: send the whole program.");
        }
        String language = optional(args, "language");
        language = language == null || language.isBlank() ? "python" : language.strip();
        try {
            executor.runtimeFor(language);
        } catch (RequestException e) {
            return ToolOutcome.error(e.getMessage());
        }
        ExecuteResult r = runner.run(owner, new ExecuteRequest(language, code, optional(args, "stdin"), null, null,
                null));
        return new ToolOutcome(List.of(ToolOutcome.Content.text(describe(r))), false, json.valueToTree(r));
    }

    /** A run for a model: stdout; then stderr, the status and the exit code when it did not go well. */
    static String describe(ExecuteResult r) {
        StringBuilder out = new StringBuilder();
        if (r.compile() != null && !r.compile().ok()) {
            out.append("[compile error]\n").append(cut(r.compile().stderr() + r.compile().stdout()).strip());
            return out.toString();
        }
        out.append(cut(r.stdout()));
        if (r.stdoutTruncated()) {
            out.append("\n[stdout was cut: the program printed more than the output limit]");
        }
        if (!r.stderr().isEmpty()) {
            out.append(out.isEmpty() || out.charAt(out.length() - 1) == '\n' ? "" : "\n")
                    .append("[stderr]\n").append(cut(r.stderr()));
        }
        String status = switch (r.status()) {
            case OK -> null;
            case RUNTIME_ERROR -> r.signal() != null ? "[the program was killed by signal " + r.signal() + "]"
                    : "[the program failed with exit code " + r.exitCode() + "]";
            case TIMEOUT -> "[timeout: the program ran past its time limit and was stopped]";
            case MEMORY_LIMIT -> "[memory_limit: the program ran out of memory and was stopped]";
            case OUTPUT_LIMIT -> "[output_limit: the program printed too much and was stopped]";
            case SANDBOX_ERROR -> "[Crucible could not run the program: " + r.message() + "]";
            case COMPILE_ERROR -> "[" + r.status().wireName() + "]";
        };
        if (status != null) {
            out.append(out.isEmpty() || out.charAt(out.length() - 1) == '\n' ? "" : "\n").append(status);
        } else if (out.isEmpty()) {
            out.append("[the program printed nothing: print() the values you want to see]");
        }
        return out.toString();
    }

    private ToolOutcome listRuntimes() {
        StringBuilder out = new StringBuilder();
        for (LanguageRuntime r : executor.runtimes().list()) {
            out.append(r.language()).append(' ').append(r.version() == null ? "" : r.version())
                    .append(r.available() ? "" : " (unavailable: " + r.unavailableReason() + ")").append('\n');
        }
        return new ToolOutcome(List.of(ToolOutcome.Content.text(out.toString().strip())), false,
                json.valueToTree(executor.runtimes().list().stream().map(RuntimeInfo::of).toList()));
    }

    private ToolOutcome createSession(String owner, JsonNode args) throws InterruptedException {
        String language = optional(args, "language");
        var info = sessions.create(owner, new SessionManager.CreateRequest(language, null, null, null));
        return new ToolOutcome(List.of(ToolOutcome.Content.text("Started a " + info.language() + " session: "
                + info.id() + ". Pass it as session_id to run_in_session and the file tools.")), false,
                json.valueToTree(info));
    }

    private String sessionOf(String owner, JsonNode args, DefaultSession defaultSession) throws InterruptedException {
        String named = optional(args, "session_id");
        if (named != null && !named.isBlank()) {
            return named.strip();
        }
        String id = defaultSession == null ? null : defaultSession.id(owner);
        if (id == null) {
            throw new IllegalArgumentException("No session: call create_session first and pass its id as session_id.");
        }
        return id;
    }

    private EditFiles filesOf(String owner, JsonNode args, DefaultSession defaultSession)
            throws InterruptedException {
        return sessions.files(owner, sessionOf(owner, args, defaultSession)).forEditing();
    }

    private ToolOutcome runInSession(String owner, JsonNode args, DefaultSession defaultSession) throws Exception {
        String code = Tools.stripFences(required(args, "code", Tools.RUN_IN_SESSION, "the code of the cell"));
        String id = sessionOf(owner, args, defaultSession);
        CellResult r = sessions.execute(owner, id, code, "auto", null);
        List<ToolOutcome.Content> content = new ArrayList<>();
        content.add(ToolOutcome.Content.text(describe(r)));
        for (CellResult.Display d : r.display() == null ? List.<CellResult.Display>of() : r.display()) {
            if (d.mime().startsWith("image/") && !d.mime().contains("svg")) {
                content.add(new ToolOutcome.Content.Image(d.mime(), d.data()));
            }
        }
        return new ToolOutcome(content, false, json.valueToTree(r));
    }

    /** A cell for a model: output, Out: value, the traceback, and what happened to the interpreter. */
    static String describe(CellResult r) {
        List<String> parts = new ArrayList<>();
        if (r.restarted()) {
            parts.add("[the interpreter had died and was restarted before this cell: earlier variables are gone, "
                    + "files in /workspace remain]");
        }
        if (!r.stdout().isEmpty()) {
            parts.add(cut(r.stdout()).stripTrailing());
        }
        if (!r.stderr().isEmpty()) {
            parts.add("[stderr]\n" + cut(r.stderr()).stripTrailing());
        }
        if (r.result() != null) {
            parts.add("Out[" + r.executionCount() + "]: " + cut(r.result()));
        }
        for (CellResult.Display d : r.display() == null ? List.<CellResult.Display>of() : r.display()) {
            parts.add(d.mime().startsWith("text/") && !d.mime().equals("text/html") ? cut(d.data())
                    : "[" + d.mime() + " output]");
        }
        if (r.error() != null) {
            String traceback = r.error().traceback();
            parts.add(cut(traceback != null && !traceback.isBlank() ? traceback.stripTrailing()
                    : r.error().name() + ": " + r.error().message()));
        }
        switch (r.status()) {
            case TIMEOUT -> parts.add("[timeout: the cell ran past its time limit and was interrupted; the "
                    + "variables are kept]");
            case INCOMPLETE -> parts.add("[incomplete input: the code is not a complete statement; send it whole]");
            case MEMORY_LIMIT -> parts.add("[memory_limit: the interpreter ran out of memory and will be restarted]");
            default -> { }
        }
        if (parts.isEmpty()) {
            parts.add("[done; nothing printed and no value. print() what you want to see]");
        }
        return String.join("\n", parts);
    }

    private ToolOutcome writeFile(String owner, JsonNode args, DefaultSession defaultSession) throws Exception {
        String path = required(args, "path", Tools.WRITE_FILE, "where to write, relative to /workspace");
        String content = required(args, "content", Tools.WRITE_FILE, "the file's text");
        String id = sessionOf(owner, args, defaultSession);
        byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
        sessions.files(owner, id).upload(path, bytes);
        return new ToolOutcome(List.of(ToolOutcome.Content.text("Wrote " + bytes.length + " bytes to /workspace/"
                + path + ".")), false, json.createObjectNode().put("path", path).put("size", bytes.length));
    }

    private ToolOutcome readFile(String owner, JsonNode args, DefaultSession defaultSession) throws Exception {
        String path = required(args, "path", Tools.READ_FILE, "the file to read, relative to /workspace");
        String id = sessionOf(owner, args, defaultSession);
        byte[] bytes = sessions.files(owner, id).download(path);
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return new ToolOutcome(List.of(ToolOutcome.Content.text("/workspace/" + path + " is a binary file of "
                    + bytes.length + " bytes; read it with code in the session instead.")), false, null);
        }
        return new ToolOutcome(List.of(ToolOutcome.Content.text(text.isEmpty() ? "[/workspace/" + path
                + " is empty]" : cut(text))), false, null);
    }

    private ToolOutcome listFiles(String owner, JsonNode args, DefaultSession defaultSession) throws Exception {
        String dir = optional(args, "dir");
        String id = sessionOf(owner, args, defaultSession);
        List<Workspace.Entry> entries = sessions.files(owner, id).list(dir == null ? "" : dir);
        StringBuilder out = new StringBuilder();
        for (Workspace.Entry e : entries) {
            out.append(e.path()).append(e.type().equals("directory") ? "/" : "  (" + e.size() + " bytes)").append('\n');
        }
        return new ToolOutcome(List.of(ToolOutcome.Content.text(entries.isEmpty() ? "[/workspace"
                + (dir == null || dir.isEmpty() ? "" : "/" + dir) + " is empty]" : out.toString().strip())), false,
                null);
    }

    private ToolOutcome closeSession(String owner, JsonNode args, DefaultSession defaultSession) throws Exception {
        String id = sessionOf(owner, args, defaultSession);
        sessions.delete(owner, id);
        return new ToolOutcome(List.of(ToolOutcome.Content.text("Closed session " + id + "; its files are deleted.")),
                false, null);
    }

    /** At most {@link #MAX_TEXT} characters: the head and the tail, with how much of the middle was cut. */
    static String cut(String s) {
        if (s == null) {
            return "";
        }
        if (s.length() <= MAX_TEXT) {
            return s;
        }
        int half = MAX_TEXT / 2;
        return s.substring(0, half) + "\n[… " + (s.length() - 2 * half) + " characters cut …]\n"
                + s.substring(s.length() - half);
    }
}
