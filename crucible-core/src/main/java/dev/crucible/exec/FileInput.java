package dev.crucible.exec;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonValue;
import dev.crucible.util.WireNames;
import java.util.Locale;

/**
 * A file placed in the program's {@code /workspace} before it runs.
 *
 * @param path a relative path inside the workspace, e.g. {@code data/input.csv}
 * @param content the content, as text or base64 per {@code encoding}
 * @param encoding {@code utf8} (default) or {@code base64}
 */
public record FileInput(
        @JsonProperty("path") String path,
        @JsonProperty("content") String content,
        @JsonProperty("encoding") Encoding encoding) {

    /** How {@code content} is written; {@link #wireName()} on the wire, read in any case. */
    public enum Encoding {
        /** Text, UTF-8 ({@code utf-8} is read too). */
        UTF8,
        BASE64;

        @JsonValue
        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /**
         * The encoding named {@code name}, in any case.
         *
         * @throws IllegalArgumentException naming the encodings there are
         */
        @JsonCreator
        public static Encoding named(String name) {
            Encoding found = "utf-8".equalsIgnoreCase(name == null ? null : name.strip()) ? UTF8
                    : WireNames.find(values(), Encoding::wireName, name);
            if (found != null) {
                return found;
            }
            throw new IllegalArgumentException("encoding is utf8 or base64");
        }
    }
}
