package dev.crucible.server.tools;

import static dev.crucible.server.tools.ToolDispatcher.optional;

import dev.crucible.client.ToolOutcome;
import dev.crucible.session.edit.ApplyPatch;
import dev.crucible.session.edit.EditFiles;
import dev.crucible.session.edit.TextEditor;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The file-editing tools agents already call, as a model calls them: Anthropic's text editor
 * ({@code str_replace_based_edit_tool}) and OpenAI's {@code apply_patch}, on a session's files. Their arguments are
 * the tools' own documented shapes; a mistake of the model is an error outcome that says how to fix it.
 */
final class EditTools {
    private final JsonMapper json;

    EditTools(JsonMapper json) {
        this.json = json;
    }

    /** {@code {command, path, file_text?, old_str?, new_str?, insert_line?, insert_text?, view_range?}}. */
    ToolOutcome textEditor(EditFiles files, JsonNode args) {
        TextEditor.Outcome r = new TextEditor(files).call(new TextEditor.Call(optional(args, "command"),
                optional(args, "path"), optional(args, "file_text"), optional(args, "old_str"),
                optional(args, "new_str"), integer(args, "insert_line"), optional(args, "insert_text"),
                range(args.get("view_range")),
                integer(args, "max_characters")));
        return r.error() ? ToolOutcome.error(r.text())
                : new ToolOutcome(List.of(ToolOutcome.Content.text(r.text())), false, null);
    }

    /**
     * {@code {operation: {type, path, diff}}} as the Responses API's {@code apply_patch_call} carries it (its
     * {@code call_id} is echoed when given), or {@code {patch: "*** Begin Patch…"}}; the structured answer is the
     * {@code apply_patch_call_output} item.
     */
    ToolOutcome applyPatch(EditFiles files, JsonNode args) {
        JsonNode op = args.get("operation");
        String patch = optional(args, "patch");
        ApplyPatch.Outcome r;
        if (op != null && op.isObject()) {
            r = new ApplyPatch(files).apply(new ApplyPatch.Operation(optional(op, "type"), optional(op, "path"),
                    optional(op, "diff")));
        } else if (patch != null) {
            r = new ApplyPatch(files).applyEnvelope(patch);
        } else {
            return ToolOutcome.error("apply_patch needs 'operation': {\"type\": \"create_file\" | \"update_file\" |"
                    + " \"delete_file\", \"path\": \"…\", \"diff\": \"…\"} (or 'patch': a whole '*** Begin Patch'"
                    + " text).");
        }
        var item = json.createObjectNode().put("type", "apply_patch_call_output");
        if (optional(args, "call_id") != null) {
            item.put("call_id", optional(args, "call_id"));
        }
        item.put("status", r.status()).put("output", r.output());
        return new ToolOutcome(List.of(ToolOutcome.Content.text(r.output())), !r.completed(), item);
    }

    private static Integer integer(JsonNode args, String field) {
        JsonNode v = args.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isIntegralNumber() && v.canConvertToInt()) {
            return v.asInt();
        }
        if (v.isString() && v.asString().strip().matches("-?\\d{1,9}")) {
            return Integer.parseInt(v.asString().strip()); // a model's "3"
        }
        throw new IllegalArgumentException("Error: `" + field + "` must be an integer, e.g. 3.");
    }

    private static List<Integer> range(JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isArray()) {
            throw new IllegalArgumentException("Error: `view_range` must be a list of two integers, e.g. [1, 40].");
        }
        List<Integer> out = new ArrayList<>();
        for (JsonNode n : v) {
            out.add(n.isIntegralNumber() && n.canConvertToInt() ? n.asInt() : null);
        }
        return out;
    }
}
