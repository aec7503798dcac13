package dev.crucible.client;

import java.util.List;
import java.util.stream.Collectors;
import tools.jackson.databind.JsonNode;

/**
 * What a tool call gave, as {@code POST /v1/tools/call} answers it: content for the model (text, and images such as
 * matplotlib figures), whether the call itself failed (bad arguments, unknown tool, unknown session — the model can
 * read the text and try again), and the underlying API answer when there is one.
 */
public record ToolOutcome(List<Content> content, boolean isError, JsonNode result) {

    /** A text ({@code type} "text") or an image ({@code type} "image", base64 {@code data}, {@code mimeType}). */
    public record Content(String type, String text, String mimeType, String data) {
        public static Content text(String text) {
            return new Content("text", text, null, null);
        }
    }

    public static ToolOutcome error(String message) {
        return new ToolOutcome(List.of(Content.text(message)), true, null);
    }

    /** The text parts, one after the other. */
    public String text() {
        return content.stream().filter(c -> "text".equals(c.type())).map(Content::text)
                .collect(Collectors.joining("\n"));
    }
}
