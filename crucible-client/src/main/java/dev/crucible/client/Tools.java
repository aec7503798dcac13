package dev.crucible.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The tools Crucible offers a model, with their whole usage guidance in the description (what the model must know to
 * use them well: plain code, print what you need, nothing persists, no network, the limits), rendered for OpenAI
 * ({@code tools} and the legacy {@code functions}), Anthropic ({@code input_schema}) and MCP. The server serves the
 * same at {@code GET /v1/tools}, and its MCP endpoint lists the same tools.
 */
public final class Tools {
    private Tools() {}

    /** Which tools: stateless execution only, the session tools, or everything (the MCP server's set). */
    public enum Set {
        STATELESS, SESSION, ALL;

        /** "stateless", "session" or "all", any case. */
        public static Set parse(String name) {
            try {
                return valueOf(name.strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException | NullPointerException e) {
                throw new IllegalArgumentException("unknown tool set '" + name + "': stateless, session or all");
            }
        }
    }

    /** One tool: its name, its description for the model, and the JSON schema of its arguments. */
    public record Tool(String name, String description, ObjectNode inputSchema) {}

    public static final String RUN_CODE = "run_code";
    public static final String LIST_RUNTIMES = "list_runtimes";
    public static final String CREATE_SESSION = "create_session";
    public static final String RUN_IN_SESSION = "run_in_session";
    public static final String WRITE_FILE = "write_file";
    public static final String READ_FILE = "read_file";
    public static final String LIST_FILES = "list_files";
    public static final String CLOSE_SESSION = "close_session";
    /** Anthropic's text editor tool, by the name its {@code text_editor_20250728} definition gives it. */
    public static final String TEXT_EDITOR = "str_replace_based_edit_tool";
    /** Anthropic's client tool type for {@link #TEXT_EDITOR}. */
    public static final String TEXT_EDITOR_TYPE = "text_editor_20250728";
    /** OpenAI's {@code apply_patch} tool (V4A diffs), one file operation per call. */
    public static final String APPLY_PATCH = "apply_patch";
    /** OpenAI's {@code shell} tool: shell lines run one after another, stateless, under one time limit. */
    public static final String SHELL = "shell";
    /** Anthropic's {@code bash} tool: one shell per session whose directory and variables carry between calls. */
    public static final String BASH = "bash";
    /** Anthropic's client tool type for {@link #BASH}. */
    public static final String BASH_TYPE = "bash_20250124";

    /** The languages named when the server's own list is not at hand. */
    public static final List<String> DEFAULT_LANGUAGES = List.of("python", "javascript", "bash", "c", "cpp", "java");

    private static final String SESSION_ID = """
            {"type": "string", "description": "The session to use, as create_session returned it. Omit it to use \
            this conversation's session, which is created on first use."}""";

    /** The tools of {@code set}; {@code languages} (the available ones, first the default) fill the language enums. */
    public static List<Tool> of(Set set, List<String> languages) {
        List<String> langs = languages == null || languages.isEmpty() ? DEFAULT_LANGUAGES : languages;
        String enumeration = CrucibleClient.JSON.writeValueAsString(langs);
        List<Tool> tools = new ArrayList<>();
        if (set != Set.SESSION) {
            tools.add(new Tool(RUN_CODE, """
                    Run a complete program in a fresh, isolated sandbox and get back what it printed. Use it to \
                    compute, check or test anything with code instead of guessing.
                    - Send plain source code only: no Markdown code fences, no explanation around it.
                    - Only printed output comes back: print() (console.log in JavaScript) every value you want to \
                    see. A bare expression on the last line shows nothing.
                    - Every call starts from nothing: no variables, files or packages survive between calls, so \
                    define and import everything the program uses in the same call.
                    - There is no network: no downloads, no pip or npm install, no HTTP. The standard library and \
                    the packages already installed are available.
                    - Only /tmp and the working directory are writable; create the files you need from the program.
                    - Limits: 10 seconds and 512 MB by default. A program past them is stopped and the result says \
                    so (timeout, memory_limit).
                    - The result is stdout, then stderr and the exit status when the program failed.
                    Example: to know 2 ** 100, send print(2 ** 100) — not a fenced block, not a bare 2 ** 100.""",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "code": {"type": "string", "description": "The whole program, as plain source code."},
                               "language": {"type": "string", "enum": %s,
                                            "description": "The program's language; %s when omitted."},
                               "stdin": {"type": "string", "description": "Text given to the program on standard \
                    input."}},
                             "required": ["code"]}""".formatted(enumeration, langs.getFirst()))));
        }
        if (set == Set.ALL) {
            tools.add(new Tool(LIST_RUNTIMES, "List the languages run_code and create_session accept, with their "
                    + "versions and whether each is available on this server.",
                    schema("{\"type\": \"object\", \"properties\": {}}")));
            tools.add(new Tool(CREATE_SESSION, """
                    Start a persistent session: an interpreter whose variables, imports and files in /workspace \
                    survive between run_in_session calls, like a notebook. Returns the session id. You rarely need \
                    it: the session tools start this conversation's session by themselves when you omit \
                    session_id. Create one to work in another language or to keep two states apart.""",
                    schema("""
                            {"type": "object",
                             "properties": {"language": {"type": "string", "enum": ["python", "javascript"],
                                            "description": "The interpreter: python (default) or javascript."}}}""")));
        }
        if (set != Set.STATELESS) {
            tools.add(new Tool(RUN_IN_SESSION, """
                    Run code in a persistent session (a Python interpreter unless the session was created for \
                    JavaScript), like a cell of a Jupyter notebook: variables, imports, functions and the files in \
                    /workspace are kept from one call to the next.
                    - Send plain source code only, without Markdown code fences.
                    - Printed output comes back, and the value of the last expression is shown as Out: <value>.
                    - A matplotlib figure comes back as an image.
                    - There is no network: no downloads, no pip or npm install, no HTTP.
                    - Each call may take 30 seconds by default; a longer one is interrupted (KeyboardInterrupt) and \
                    the variables are kept. If the interpreter dies, the answer says it was restarted: variables are \
                    then gone, files remain.
                    - Errors come back as the traceback; fix the code and call again.""",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "code": {"type": "string", "description": "The code of the cell."},
                               "session_id": %s},
                             "required": ["code"]}""".formatted(SESSION_ID))));
            tools.add(new Tool(WRITE_FILE, "Write a text file into the session's /workspace, creating folders as "
                    + "needed and replacing what was there. Code in the session reads it at /workspace/<path> (or "
                    + "by its relative path: /workspace is the working directory).",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "path": {"type": "string", "description": "Relative to /workspace, e.g. data/input.csv."},
                               "content": {"type": "string", "description": "The file's text."},
                               "session_id": %s},
                             "required": ["path", "content"]}""".formatted(SESSION_ID))));
            tools.add(new Tool(READ_FILE, "Read a text file from the session's /workspace, e.g. one your code "
                    + "wrote. Long files are cut in the middle.",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "path": {"type": "string", "description": "Relative to /workspace."},
                               "session_id": %s},
                             "required": ["path"]}""".formatted(SESSION_ID))));
            tools.add(new Tool(LIST_FILES, "List the files and folders in the session's /workspace, with sizes.",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "dir": {"type": "string", "description": "A folder relative to /workspace; the whole \
                    workspace when omitted."},
                               "session_id": %s}}""".formatted(SESSION_ID))));
            tools.add(new Tool(TEXT_EDITOR, """
                    View and edit text files in the session (Anthropic's text editor). Commands: \
                    view (a file with line numbers, or a folder two levels deep; view_range [start, end] with \
                    1-based lines, -1 for the end), create (write file_text), str_replace (replace old_str, which \
                    must occur exactly once, by new_str), insert (insert_text after line insert_line; 0 is the \
                    top). Paths are absolute, e.g. /workspace/app.py; outside /workspace, what the session's user \
                    may read or write.""",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
                               "path": {"type": "string", "description": "e.g. /workspace/app.py"},
                               "file_text": {"type": "string", "description": "create: the file's text."},
                               "old_str": {"type": "string", "description": "str_replace: the exact text to \
                    replace, unique in the file."},
                               "new_str": {"type": "string", "description": "str_replace: its replacement."},
                               "insert_line": {"type": "integer", "description": "insert: the line after which \
                    to insert (0: the top)."},
                               "insert_text": {"type": "string", "description": "insert: the text to insert."},
                               "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, \
                    "maxItems": 2, "description": "view: [start, end] lines, 1-based; end -1 is the last."},
                               "session_id": %s},
                             "required": ["command", "path"]}""".formatted(SESSION_ID))));
            tools.add(new Tool(APPLY_PATCH, """
                    Create, update or delete one file in the session with a V4A diff (OpenAI's \
                    apply_patch). create_file: every line of diff starts with +. update_file: '@@ <a line near \
                    the change>' anchors, then context lines starting with a space, removed lines with -, added \
                    lines with +; no line numbers. delete_file needs no diff. Paths are relative to /workspace, or \
                    absolute.""",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "operation": {"type": "object",
                                 "properties": {
                                   "type": {"type": "string", "enum": ["create_file", "update_file", "delete_file"]},
                                   "path": {"type": "string", "description": "Relative to /workspace, or absolute."},
                                   "diff": {"type": "string", "description": "The V4A diff (not for delete_file)."}},
                                 "required": ["type", "path"]},
                               "session_id": %s},
                             "required": ["operation"]}""".formatted(SESSION_ID))));
            tools.add(new Tool(SHELL, """
                    Run shell commands in the session's sandbox (OpenAI's shell tool): each of commands runs in turn \
                    in /workspace, by bash, stateless (a cd or a variable does not carry to the next), and the \
                    answer gives each one's stdout, stderr and exit code. timeout_ms bounds the whole list.""",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "commands": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                 "description": "Shell lines, e.g. ls -la, then pytest -q."},
                               "timeout_ms": {"type": "integer", "description": "For all the commands together."},
                               "max_output_length": {"type": "integer", "description": "Passed back in the answer."},
                               "session_id": %s},
                             "required": ["commands"]}""".formatted(SESSION_ID))));
        }
        if (set != Set.STATELESS) {
            tools.add(new Tool(BASH, """
                    Run a command in a persistent bash shell in the session's sandbox (Anthropic's bash tool): the \
                    working directory (first /workspace) and exported variables carry from one call to the next. \
                    The answer is the command's stdout, then its stderr. A command may take 120 seconds; past that \
                    the shell is killed and must be restarted with restart: true (so must a shell that exited). \
                    There is no network unless the session was given egress.""",
                    schema("""
                            {"type": "object",
                             "properties": {
                               "command": {"type": "string", "description": "The bash command to run."},
                               "restart": {"type": "boolean", "description": "Restart the shell (a fresh one, in \
                    /workspace)."},
                               "session_id": %s}}""".formatted(SESSION_ID))));
        }
        if (set == Set.ALL) {
            tools.add(new Tool(CLOSE_SESSION, "End a session and delete its files, when you no longer need it.",
                    schema("""
                            {"type": "object",
                             "properties": {"session_id": %s}}""".formatted(SESSION_ID))));
        }
        return List.copyOf(tools);
    }

    /**
     * The tools rendered in {@code format}: "openai" (the {@code tools} array of Chat Completions), "openai-functions"
     * (the legacy {@code functions} array), "anthropic" (Messages {@code tools}) or "mcp" ({@code tools/list} entries).
     */
    public static ArrayNode render(List<Tool> tools, String format) {
        ArrayNode out = CrucibleClient.JSON.createArrayNode();
        for (Tool tool : tools) {
            ObjectNode node = CrucibleClient.JSON.createObjectNode();
            switch (format == null ? "" : format.toLowerCase(Locale.ROOT)) {
                case "openai" -> {
                    node.put("type", "function");
                    node.set("function", function(tool));
                }
                case "openai-functions", "functions" -> node.setAll(function(tool));
                case "anthropic" -> {
                    if (tool.name().equals(TEXT_EDITOR) || tool.name().equals(BASH)) {
                        // a client tool Claude is trained on: type and name only
                        node.put("type", tool.name().equals(BASH) ? BASH_TYPE : TEXT_EDITOR_TYPE);
                        node.put("name", tool.name());
                        break;
                    }
                    node.put("name", tool.name());
                    node.put("description", tool.description());
                    node.set("input_schema", tool.inputSchema().deepCopy());
                }
                case "mcp" -> {
                    node.put("name", tool.name());
                    node.put("description", tool.description());
                    node.set("inputSchema", tool.inputSchema().deepCopy());
                }
                default -> throw new IllegalArgumentException("unknown tool format '" + format
                        + "': openai, openai-functions, anthropic or mcp");
            }
            out.add(node);
        }
        return out;
    }

    private static ObjectNode function(Tool tool) {
        ObjectNode node = CrucibleClient.JSON.createObjectNode();
        node.put("name", tool.name());
        node.put("description", tool.description());
        node.set("parameters", tool.inputSchema().deepCopy());
        return node;
    }

    /** {@code languages} with python first when it is there: python is the tools' default language. */
    public static List<String> pythonFirst(List<String> languages) {
        List<String> ordered = new ArrayList<>(languages);
        if (ordered.remove("python")) {
            ordered.addFirst("python");
        }
        return List.copyOf(ordered);
    }

    /** Whether a tool of this name works on a session. */
    public static boolean usesSession(String name) {
        return switch (name) {
            case RUN_IN_SESSION, WRITE_FILE, READ_FILE, LIST_FILES, CLOSE_SESSION, TEXT_EDITOR, APPLY_PATCH, SHELL,
                 BASH -> true;
            default -> false;
        };
    }

    /**
     * The code without the Markdown fence a model put around it anyway ({@code ```python … ```}, {@code ~~~}), and
     * without surrounding blank lines; anything else unchanged.
     */
    public static String stripFences(String code) {
        if (code == null) {
            return null;
        }
        String s = code.strip();
        for (String fence : List.of("```", "~~~")) {
            if (s.startsWith(fence)) {
                int firstLine = s.indexOf('\n');
                if (firstLine < 0) {
                    return s.substring(fence.length()).replace(fence, "").strip();
                }
                String body = s.substring(firstLine + 1);
                String trimmed = body.stripTrailing();
                if (trimmed.endsWith(fence)) {
                    body = trimmed.substring(0, trimmed.length() - fence.length());
                }
                return body.strip().isEmpty() ? "" : body.stripTrailing() + "\n";
            }
        }
        return code;
    }

    private static ObjectNode schema(String json) {
        JsonNode node = CrucibleClient.JSON.readTree(json);
        return (ObjectNode) node;
    }
}
