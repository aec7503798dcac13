package dev.crucible.server;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.runtime.LanguageRuntime;
import java.util.List;

/** One entry of {@code GET /v1/runtimes}. */
@JsonInclude(JsonInclude.Include.NON_NULL)
record RuntimeInfo(
        @JsonProperty("language") String language,
        @JsonProperty("aliases") List<String> aliases,
        @JsonProperty("version") String version,
        @JsonProperty("available") boolean available,
        @JsonProperty("reason") String reason) {

    static RuntimeInfo of(LanguageRuntime r) {
        return new RuntimeInfo(r.language(), r.aliases(), r.version(), r.available(), r.unavailableReason());
    }
}
