package dev.crucible.health;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * One part's state in a readiness report ({@code GET /readyz}: {@code parts}).
 *
 * @param part the part's name, e.g. {@code slots}, {@code zygote:python}, {@code peers}
 * @param state how it is doing
 * @param detail what a person reading the report should know, as a sentence (why it is not ok), or null when ok
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PartStatus(
        @JsonProperty("part") String part,
        @JsonProperty("state") PartState state,
        @JsonProperty("detail") String detail) {

    public static PartStatus ok(String part) {
        return new PartStatus(part, PartState.OK, null);
    }

    public static PartStatus ok(String part, String detail) {
        return new PartStatus(part, PartState.OK, detail);
    }

    public static PartStatus degraded(String part, String detail) {
        return new PartStatus(part, PartState.DEGRADED, detail);
    }

    public static PartStatus down(String part, String detail) {
        return new PartStatus(part, PartState.DOWN, detail);
    }
}
