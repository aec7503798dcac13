package dev.crucible.exec;

import com.fasterxml.jackson.annotation.JsonProperty;

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
        @JsonProperty("encoding") String encoding) {}
