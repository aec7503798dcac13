package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * What {@code POST /v1/sessions/{id}/commit} answers (issue 30): the session's workspace committed as one layer over its
 * image, now an image of the store.
 *
 * @param image the new image's name ({@code name:tag}), usable at once as {@code image} of a request, a runtime or an
 *     E2B template
 * @param digest its manifest's digest; {@code id} its config's
 * @param base the digest of the image it was made over (the session's)
 * @param layerBytes the new layer's size (gzip); {@code entries} its tar entries, {@code whiteouts} of them deletions
 */
public record CommitResult(
        @JsonProperty("image") String image,
        @JsonProperty("digest") String digest,
        @JsonProperty("id") String id,
        @JsonProperty("base") String base,
        @JsonProperty("layer_bytes") long layerBytes,
        @JsonProperty("entries") long entries,
        @JsonProperty("whiteouts") long whiteouts,
        @JsonProperty("took_ms") long tookMs) {}
