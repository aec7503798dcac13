package dev.crucible.server.http;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.runtime.LanguageRuntime;
import java.util.List;

/**
 * One entry of {@code GET /v1/runtimes}; {@code image} and its digest for a runtime that runs in an image;
 * {@code isolation} the wall its programs run behind ({@code namespaces}, {@code gvisor}).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record RuntimeInfo(
        @JsonProperty("language") String language,
        @JsonProperty("aliases") List<String> aliases,
        @JsonProperty("version") String version,
        @JsonProperty("available") boolean available,
        @JsonProperty("reason") String reason,
        @JsonProperty("image") String image,
        @JsonProperty("image_digest") String imageDigest,
        @JsonProperty("isolation") String isolation) {

    public static RuntimeInfo of(LanguageRuntime r) {
        return new RuntimeInfo(r.language(), r.aliases(), r.version(), r.available(), r.unavailableReason(),
                r.image() == null ? null : r.image().reference(), r.imageDigest(), r.tier().wire());
    }
}
