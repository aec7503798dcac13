package dev.crucible.exec;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonValue;
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
            String n = name == null ? "" : name.strip().toLowerCase(Locale.ROOT);
            if (n.equals("utf-8")) {
                return UTF8;
            }
            for (Encoding e : values()) {
                if (e.wireName().equals(n)) {
                    return e;
                }
            }
            throw new IllegalArgumentException("encoding is utf8 or base64");
        }
    }
}
