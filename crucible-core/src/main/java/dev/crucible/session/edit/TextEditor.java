package dev.crucible.session.edit;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Anthropic's text editor tool ({@code text_editor_20250728}, named {@code str_replace_based_edit_tool}) over a
 * session's files: {@code view} (a file as {@code cat -n} shows it, or a directory two levels deep), {@code create},
 * {@code str_replace} (exactly one match) and {@code insert} (after a line; 0 is the top), with the messages
 * Anthropic's documentation gives (https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool).
 * Tabs are kept as they are (the reference implementation expands them; a file's bytes should not change where the
 * model changed nothing). Stateless and thread-safe.
 */
public final class TextEditor {
    /** What {@code view} shows at most when the call sets no {@code max_characters}. */
    public static final int MAX_VIEW = 16_000;

    /** One call, as the model sends it; unused fields null. {@code insertText} falls back to {@code newStr}. */
    public record Call(String command, String path, String fileText, String oldStr, String newStr,
            Integer insertLine, String insertText, List<Integer> viewRange, Integer maxCharacters) {}

    /** What the model gets back: text, and whether it is an error ({@code is_error} of the tool result). */
    public record Outcome(String text, boolean error) {
        static Outcome ok(String text) {
            return new Outcome(text, false);
        }

        static Outcome error(String text) {
            return new Outcome(text, true);
        }
    }

    private final EditFiles files;

    public TextEditor(EditFiles files) {
        this.files = files;
    }

    /** Runs one call; a mistake of the model is an error outcome, never an exception. */
    public Outcome call(Call call) {
        try {
            String command = call.command() == null ? "" : call.command().strip();
            return switch (command) {
                case "view" -> view(EditPaths.of(call.path()), call.viewRange(), call.maxCharacters());
                case "create" -> create(EditPaths.of(call.path()), required(call.fileText(), "file_text"));
                case "str_replace" -> replace(EditPaths.of(call.path()), required(call.oldStr(), "old_str"),
                        call.newStr() == null ? "" : call.newStr());
                case "insert" -> insert(EditPaths.of(call.path()), call.insertLine(),
                        call.insertText() != null ? call.insertText() : required(call.newStr(), "insert_text"));
                case "undo_edit" -> Outcome.error("Error: undo_edit is not supported by this editor (nor by"
                        + " text_editor_20250728); make the reverse edit with str_replace");
                default -> Outcome.error("Error: Unrecognized command " + command + ". The allowed commands are:"
                        + " view, create, str_replace, insert");
            };
        } catch (PatchException e) {
            return Outcome.error(e.getMessage());
        } catch (RequestException e) {
            return Outcome.error(worded(e, call.path()));
        }
    }

    private static String required(String value, String field) {
        if (value == null) {
            throw new PatchException("Error: Parameter `" + field + "` is required for this command");
        }
        return value;
    }

    private static String worded(RequestException e, String path) {
        return e.code() == ErrorCode.FILE_NOT_FOUND ? "Error: File not found: " + path
                : "Error: " + e.getMessage();
    }

    private Outcome view(String path, List<Integer> range, Integer maxCharacters) {
        if (path.isEmpty() || isDirectory(path)) {
            if (range != null) {
                return Outcome.error("Error: The `view_range` parameter is not allowed when `path` points to a"
                        + " directory.");
            }
            return Outcome.ok(listing(path));
        }
        String text = files.readText(path);
        List<String> lines = lines(text);
        int from = 1;
        int to = lines.size();
        if (range != null) {
            if (range.size() != 2 || range.get(0) == null || range.get(1) == null) {
                return Outcome.error("Error: Invalid `view_range`. It should be a list of two integers.");
            }
            from = range.get(0);
            to = range.get(1) == -1 ? lines.size() : range.get(1);
            if (from < 1 || from > Math.max(1, lines.size())) {
                return Outcome.error("Error: Invalid `view_range`: " + range + ". Its first element `" + from
                        + "` should be within the range of lines of the file: [1, " + lines.size() + "]");
            }
            if (to < from || to > lines.size()) {
                return Outcome.error("Error: Invalid `view_range`: " + range + ". Its second element `" + range.get(1)
                        + "` should be -1 or within [" + from + ", " + lines.size() + "]");
            }
        }
        StringBuilder out = new StringBuilder();
        for (int n = from; n <= to && n <= lines.size(); n++) {
            out.append(String.format("%6d\t%s%n", n, lines.get(n - 1)));
        }
        int cap = maxCharacters == null || maxCharacters <= 0 ? MAX_VIEW : maxCharacters;
        String shown = out.toString();
        if (shown.length() > cap) {
            int cut = shown.lastIndexOf('\n', cap);
            shown = shown.substring(0, cut < 0 ? cap : cut + 1) + "<response clipped><NOTE>The file is longer than"
                    + " this; view the rest with view_range [start, end].</NOTE>\n";
        }
        return Outcome.ok("Here's the result of running `cat -n` on " + EditPaths.shown(path) + ":\n" + shown);
    }

    /** Whether {@code path} lists as a directory: however it is spelt ({@code /}, {@code ..}, {@code /workspace/..}). */
    private boolean isDirectory(String path) {
        try {
            files.list(path);
            return true;
        } catch (RequestException e) {
            return false;
        }
    }

    private String listing(String path) {
        List<String> shown = new ArrayList<>();
        for (EditFiles.Entry entry : files.list(path)) {
            if (hidden(entry.path())) {
                continue;
            }
            shown.add(EditPaths.shown(entry.path()) + (entry.directory() ? "/" : ""));
            if (entry.directory()) {
                for (EditFiles.Entry inner : inside(entry.path())) {
                    if (!hidden(inner.path())) {
                        shown.add(EditPaths.shown(inner.path()) + (inner.directory() ? "/" : ""));
                    }
                }
            }
        }
        return "Here are the files and directories up to 2 levels deep in " + EditPaths.shown(path)
                + ", excluding hidden items:\n" + String.join("\n", shown);
    }

    /** A directory's entries in a listing, none when the user may not list it (root's home, /proc under the root). */
    private List<EditFiles.Entry> inside(String directory) {
        try {
            return files.list(directory);
        } catch (RequestException e) {
            return List.of();
        }
    }

    private static boolean hidden(String path) {
        return path.substring(path.lastIndexOf('/') + 1).startsWith(".");
    }

    private Outcome create(String path, String fileText) {
        files.write(path, fileText.getBytes(StandardCharsets.UTF_8));
        return Outcome.ok("File created successfully at: " + EditPaths.shown(path));
    }

    private Outcome replace(String path, String oldStr, String newStr) {
        String text = files.readText(path);
        if (oldStr.isEmpty()) {
            return Outcome.error("Error: `old_str` is empty; give the exact text to replace, with enough context to be"
                    + " unique");
        }
        int first = text.indexOf(oldStr);
        if (first < 0) {
            return Outcome.error("Error: No match found for replacement. Please check your text and try again.");
        }
        int count = 0;
        for (int at = first; at >= 0; at = text.indexOf(oldStr, at + 1)) {
            count++;
        }
        if (count > 1) {
            return Outcome.error("Error: Found " + count + " matches for replacement text. Please provide more context"
                    + " to make a unique match.");
        }
        files.write(path, (text.substring(0, first) + newStr + text.substring(first + oldStr.length()))
                .getBytes(StandardCharsets.UTF_8));
        return Outcome.ok("Successfully replaced text at exactly one location.");
    }

    private Outcome insert(String path, Integer line, String insertText) {
        if (line == null) {
            return Outcome.error("Error: Parameter `insert_line` is required for command: insert");
        }
        String text = files.readText(path);
        List<String> lines = lines(text);
        if (line < 0 || line > lines.size()) {
            return Outcome.error("Error: Invalid `insert_line` parameter: " + line + ". It should be within the range"
                    + " of lines of the file: [0, " + lines.size() + "]");
        }
        // whole lines after line `line`, in the file's own line ending; one final newline of the text ends its last
        // line rather than adding an empty one
        String newline = text.contains("\r\n") ? "\r\n" : "\n";
        List<String> parts = new ArrayList<>(List.of(text.split(newline, -1)));
        String body = insertText.replace("\r\n", "\n");
        if (body.endsWith("\n")) {
            body = body.substring(0, body.length() - 1);
        }
        parts.addAll(line, List.of(body.split("\n", -1)));
        files.write(path, String.join(newline, parts).getBytes(StandardCharsets.UTF_8));
        return Outcome.ok("The file " + EditPaths.shown(path) + " has been edited: the text was inserted after line "
                + line + ".");
    }

    /** The lines of {@code text}, without their endings; a final newline starts no extra line. */
    static List<String> lines(String text) {
        if (text.isEmpty()) {
            return List.of();
        }
        String body = text.endsWith("\n") ? text.substring(0, text.length() - 1) : text;
        List<String> lines = new ArrayList<>();
        for (String line : body.split("\n", -1)) {
            lines.add(line.endsWith("\r") ? line.substring(0, line.length() - 1) : line);
        }
        return lines;
    }
}
