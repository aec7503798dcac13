package dev.crucible.client;

import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.databind.node.StringNode;

/**
 * Crucible as tools of a model: the schemas to send with the request, and {@link #fromResponse} to run every tool call
 * of the reply and get the messages to append to the conversation. Works with OpenAI Chat Completions ({@code
 * tool_calls}, and the legacy {@code function_call}) and Anthropic Messages ({@code tool_use} blocks).
 *
 * <pre>{@code
 * CodeTools tools = CodeTools.of(crucible, Tools.Set.STATELESS);
 * // request: "tools": tools.openai()   — reply JSON in `completion`
 * messages.addAll(tools.fromResponse(completion)); // role "tool" messages, one per call
 * }</pre>
 *
 * <p>Session tools use one session of this object, created on first use in {@link #sessionLanguage} unless the model
 * names a {@code session_id}; {@link #close()} deletes it. Nothing a model writes makes these methods throw: a
 * reply without a tool call, an unknown tool, arguments that are not JSON, a missing {@code code} and even an
 * unreachable server come back as error results the model can read.
 */
public final class CodeTools implements AutoCloseable {
    private final CrucibleClient client;
    private final Tools.Set set;
    private final String sessionLanguage;
    private List<String> languages;
    private String sessionId;

    private CodeTools(CrucibleClient client, Tools.Set set, String sessionLanguage) {
        this.client = client;
        this.set = set;
        this.sessionLanguage = sessionLanguage;
    }

    /** The tools of {@code set}; session tools start a Python session when first called. */
    public static CodeTools of(CrucibleClient client, Tools.Set set) {
        return new CodeTools(client, set, "python");
    }

    /** As {@link #of}, with the session (when one is started) in {@code language}. */
    public static CodeTools of(CrucibleClient client, Tools.Set set, String sessionLanguage) {
        return new CodeTools(client, set, sessionLanguage);
    }

    public List<Tools.Tool> tools() {
        return Tools.of(set, languages());
    }

    /** For {@code tools} of a Chat Completions request. */
    public ArrayNode openai() {
        return Tools.render(tools(), "openai");
    }

    /** For the legacy {@code functions} of a Chat Completions request. */
    public ArrayNode openaiFunctions() {
        return Tools.render(tools(), "openai-functions");
    }

    /** For {@code tools} of an Anthropic Messages request. */
    public ArrayNode anthropic() {
        return Tools.render(tools(), "anthropic");
    }

    /** The session the session tools use, or null before the first one ran. */
    public synchronized String sessionId() {
        return sessionId;
    }

    /** Whether {@code response} (an OpenAI completion or message, or an Anthropic message) asks for a tool. */
    public static boolean hasToolCalls(JsonNode response) {
        JsonNode message = openaiMessage(response);
        if (message != null) {
            return message.path("tool_calls").size() > 0 || message.path("function_call").isObject();
        }
        for (JsonNode block : response.path("content")) {
            if ("tool_use".equals(block.path("type").asString(""))) {
                return true;
            }
        }
        return false;
    }

    /** As {@link #fromResponse(JsonNode)}, from the reply's JSON text. */
    public List<ObjectNode> fromResponse(String responseJson) {
        JsonNode response;
        try {
            response = CrucibleClient.JSON.readTree(responseJson);
        } catch (JacksonException e) {
            return List.of(note("The reply given to fromResponse is not JSON (" + e.getOriginalMessage()
                    + "), so no tool was run."));
        }
        return fromResponse(response);
    }

    /**
     * Runs every tool call of {@code response} and returns the messages to append: for OpenAI one {@code role: tool}
     * message per call (or one {@code role: function} message for a legacy {@code function_call}); for Anthropic one
     * {@code role: user} message holding a {@code tool_result} per {@code tool_use}. A reply without any tool call
     * gives a single {@code role: user} message saying so.
     */
    public List<ObjectNode> fromResponse(JsonNode response) {
        if (response == null || !response.isObject()) {
            return List.of(note("The reply given to fromResponse is not a JSON object, so no tool was run."));
        }
        JsonNode message = openaiMessage(response);
        if (message != null) {
            return fromOpenai(message);
        }
        if (response.path("content").isArray()) {
            return fromAnthropic(response.path("content"));
        }
        return List.of(note("The reply is neither an OpenAI chat completion nor an Anthropic message, so no tool "
                + "was run."));
    }

    private List<ObjectNode> fromOpenai(JsonNode message) {
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode call : message.path("tool_calls")) {
            JsonNode function = call.path("function");
            ToolOutcome outcome = run(function.path("name").asString(""), function.get("arguments"));
            ObjectNode m = CrucibleClient.JSON.createObjectNode();
            m.put("role", "tool");
            m.put("tool_call_id", call.path("id").asString(""));
            m.put("content", textFor(outcome, false));
            out.add(m);
        }
        JsonNode legacy = message.path("function_call");
        if (out.isEmpty() && legacy.isObject()) {
            String name = legacy.path("name").asString("");
            ToolOutcome outcome = run(name, legacy.get("arguments"));
            ObjectNode m = CrucibleClient.JSON.createObjectNode();
            m.put("role", "function");
            m.put("name", name);
            m.put("content", textFor(outcome, false));
            out.add(m);
        }
        if (out.isEmpty()) {
            out.add(note("The reply has no tool call, so no code was run. To run code, call "
                    + Tools.of(set, null).getFirst().name() + " with it."));
        }
        return out;
    }

    private List<ObjectNode> fromAnthropic(JsonNode content) {
        ArrayNode results = CrucibleClient.JSON.createArrayNode();
        for (JsonNode block : content) {
            if (!"tool_use".equals(block.path("type").asString(""))) {
                continue;
            }
            ToolOutcome outcome = run(block.path("name").asString(""), block.get("input"));
            ObjectNode result = results.addObject();
            result.put("type", "tool_result");
            result.put("tool_use_id", block.path("id").asString(""));
            ArrayNode parts = result.putArray("content");
            parts.addObject().put("type", "text").put("text", textFor(outcome, true));
            for (ToolOutcome.Content c : outcome.content()) {
                if (c instanceof ToolOutcome.Content.Image i) {
                    ObjectNode image = parts.addObject().put("type", "image");
                    image.putObject("source").put("type", "base64").put("media_type", i.mimeType())
                            .put("data", i.data());
                }
            }
            if (outcome.isError()) {
                result.put("is_error", true);
            }
        }
        if (results.isEmpty()) {
            return List.of(note("The reply has no tool_use block, so no code was run. To run code, use the "
                    + Tools.of(set, null).getFirst().name() + " tool."));
        }
        ObjectNode m = CrucibleClient.JSON.createObjectNode();
        m.put("role", "user");
        m.set("content", results);
        return List.of(m);
    }

    /** Runs one call; never throws: every failure is an error outcome the model can read. */
    private ToolOutcome run(String name, JsonNode arguments) {
        if (name.isEmpty()) {
            return ToolOutcome.error("The tool call has no name. Call one of: " + names() + ".");
        }
        if (Tools.of(set, null).stream().noneMatch(t -> t.name().equals(name))) {
            return ToolOutcome.error("There is no tool named '" + name + "'. Call one of: " + names() + ".");
        }
        JsonNode args = arguments == null || arguments.isNull() ? StringNode.valueOf("{}") : arguments;
        try {
            return client.callTool(name, args, Tools.usesSession(name) && !names(args) ? session() : null);
        } catch (CrucibleException e) {
            return ToolOutcome.error("Crucible could not run the call (" + e.code() + "): " + e.getMessage());
        }
    }

    /** Whether the arguments name a session themselves. */
    private static boolean names(JsonNode args) {
        JsonNode parsed = args;
        if (args.isString()) {
            try {
                parsed = CrucibleClient.JSON.readTree(args.asString());
            } catch (JacksonException e) {
                return false;
            }
        }
        return parsed != null && parsed.path("session_id").isString();
    }

    private synchronized String session() {
        if (sessionId == null) {
            sessionId = client.sessions().create(Session.Request.of(sessionLanguage)).id();
        }
        return sessionId;
    }

    private synchronized List<String> languages() {
        if (languages == null) {
            languages = Tools.pythonFirst(client.runtimes().stream().filter(RuntimeInfo::available)
                    .map(RuntimeInfo::language).toList());
        }
        return languages;
    }

    private String names() {
        return String.join(", ", Tools.of(set, null).stream().map(Tools.Tool::name).toList()); // names need no server
    }

    /** The outcome's text; images are named where the format cannot carry them. */
    private static String textFor(ToolOutcome outcome, boolean imagesCarried) {
        String text = outcome.text();
        long images = outcome.content().stream().filter(c -> c instanceof ToolOutcome.Content.Image).count();
        if (images > 0 && !imagesCarried) {
            text += "\n[" + images + " image(s) made, e.g. a figure; this reply format cannot show them]";
        }
        return outcome.isError() && !text.startsWith("Error") ? "Error: " + text : text;
    }

    private static JsonNode openaiMessage(JsonNode response) {
        if (response.path("choices").isArray()) {
            return response.path("choices").path(0).path("message");
        }
        if (response.has("tool_calls") || response.has("function_call")
                || ("assistant".equals(response.path("role").asString("")) && !response.path("content").isArray())) {
            return response;
        }
        return null;
    }

    private static ObjectNode note(String text) {
        ObjectNode m = CrucibleClient.JSON.createObjectNode();
        m.put("role", "user");
        m.put("content", "[crucible] " + text);
        return m;
    }

    /** Deletes the session this object started, if any. */
    @Override
    public synchronized void close() {
        if (sessionId != null) {
            try {
                client.sessions().open(sessionId).delete();
            } catch (CrucibleException e) {
                // already gone (reaped, or the server restarted without it): nothing to free
            }
            sessionId = null;
        }
    }
}
