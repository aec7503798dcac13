package dev.crucible.server.tools;

import static dev.crucible.server.tools.ToolDispatcher.optional;

import dev.crucible.client.ToolOutcome;
import dev.crucible.session.SessionManager;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * OpenAI's {@code shell} tool (https://developers.openai.com/api/docs/guides/tools-shell) on a session: a
 * {@code shell_call}'s {@code action} ({@code commands}, {@code timeout_ms}, {@code max_output_length}), each command
 * run in turn, stateless, by bash (sh where the root has none) in {@code /workspace}, under one deadline for the
 * batch; the structured answer is the {@code shell_call_output} item, an outcome per command ({@code exit} with its
 * code, or {@code timeout}).
 */
final class ShellTool {
    /** bash where the root has one (models write bash), else sh; the command is $0, quoted by nobody. */
    private static final String LAUNCH = "if command -v bash >/dev/null 2>&1; then exec bash -c \"$0\"; fi;"
            + " exec sh -c \"$0\"";
    private static final int MAX_COMMANDS = 64;

    private final SessionManager sessions;
    private final JsonMapper json;

    ShellTool(SessionManager sessions, JsonMapper json) {
        this.sessions = sessions;
        this.json = json;
    }

    /** {@code {commands, timeout_ms?, max_output_length?, call_id?}}, or the same inside {@code action}. */
    ToolOutcome call(String owner, String sessionId, JsonNode args) throws InterruptedException {
        JsonNode action = args.get("action") != null && args.get("action").isObject() ? args.get("action") : args;
        JsonNode commands = action.get("commands");
        if (commands == null || !commands.isArray() || commands.isEmpty() || commands.size() > MAX_COMMANDS) {
            return ToolOutcome.error("shell needs 'commands': a list of 1 to " + MAX_COMMANDS + " shell lines, e.g."
                    + " {\"commands\": [\"ls -la\", \"python3 --version\"]}.");
        }
        Long timeout = action.hasNonNull("timeout_ms") && action.get("timeout_ms").canConvertToLong()
                ? action.get("timeout_ms").asLong() : null;
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout * 1_000_000;
        ArrayNode output = json.createArrayNode();
        StringBuilder text = new StringBuilder();
        for (JsonNode c : commands) {
            if (!c.isString()) {
                return ToolOutcome.error("each of shell's 'commands' must be a string (a shell line).");
            }
            String line = c.asString();
            ObjectNode entry = output.addObject();
            long left = timeout == null ? -1 : (deadline - System.nanoTime()) / 1_000_000;
            text.append("$ ").append(line).append('\n');
            if (timeout != null && left < 1) { // the batch's deadline passed before this one could start
                entry.put("stdout", "").put("stderr", "");
                entry.putObject("outcome").put("type", "timeout");
                text.append("[timeout: not run, the batch's time limit had passed]\n");
                continue;
            }
            CommandResult r = sessions.command(owner, sessionId, new CommandRequest(null, List.of("/bin/sh", "-c",
                    LAUNCH, line), null, null, timeout == null ? null : left, null, null, null));
            entry.put("stdout", r.stdout()).put("stderr", r.stderr());
            if (r.timedOut()) {
                entry.putObject("outcome").put("type", "timeout");
            } else {
                entry.putObject("outcome").put("type", "exit").put("exit_code", r.exitCode() == null
                        ? 128 + r.signal() : r.exitCode());
            }
            text.append(r.stdout());
            if (!r.stderr().isEmpty()) {
                text.append(text.charAt(text.length() - 1) == '\n' ? "" : "\n").append("[stderr]\n").append(r.stderr());
            }
            if (text.charAt(text.length() - 1) != '\n') {
                text.append('\n');
            }
            text.append(r.timedOut() ? "[timeout: killed at the time limit]\n" : r.exitCode() == null
                    ? "[killed by signal " + r.signal() + "]\n" : r.exitCode() != 0 ? "[exit " + r.exitCode() + "]\n"
                    : "");
        }
        ObjectNode item = json.createObjectNode().put("type", "shell_call_output");
        if (optional(args, "call_id") != null) {
            item.put("call_id", optional(args, "call_id"));
        }
        if (action.hasNonNull("max_output_length")) {
            item.set("max_output_length", action.get("max_output_length"));
        }
        item.set("output", output);
        return new ToolOutcome(List.of(ToolOutcome.Content.text(text.toString().stripTrailing())),
                false, item);
    }
}
