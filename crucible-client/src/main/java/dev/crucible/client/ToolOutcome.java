package dev.crucible.client;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;
import tools.jackson.databind.JsonNode;

/**
 * What a tool call gave, as {@code POST /v1/tools/call} answers it: content for the model (text, and images such as
 * matplotlib figures), whether the call itself failed (bad arguments, unknown tool, unknown session — the model can
 * read the text and try again), and the underlying API answer when there is one.
 */
public record ToolOutcome(List<Content> content, boolean isError, JsonNode result) {

    /**
     * A part of the content, written with its {@code type}: {@code "text"} or {@code "image"}. A type this client does
     * not know (a newer server's) reads as a text without text, which {@link #text()} passes over.
     */
    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type", defaultImpl = Content.Text.class)
    @JsonSubTypes({@JsonSubTypes.Type(value = Content.Text.class, name = "text"),
            @JsonSubTypes.Type(value = Content.Image.class, name = "image")})
    public sealed interface Content permits Content.Text, Content.Image {
        /** Text for the model. */
        record Text(String text) implements Content {}

        /** An image, such as a matplotlib figure: base64 {@code data} of type {@code mimeType}. */
        record Image(String mimeType, String data) implements Content {}

        static Content text(String text) {
            return new Text(text);
        }
    }

    public static ToolOutcome error(String message) {
        return new ToolOutcome(List.of(Content.text(message)), true, null);
    }

    /** The text parts, one after the other. */
    public String text() {
        return content.stream().map(c -> c instanceof Content.Text t ? t.text() : null).filter(Objects::nonNull)
                .collect(Collectors.joining("\n"));
    }
}
