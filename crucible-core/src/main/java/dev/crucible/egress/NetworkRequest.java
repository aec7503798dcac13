package dev.crucible.egress;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonValue;
import dev.crucible.util.WireNames;
import java.util.List;
import java.util.Locale;

/**
 * What a request or session asks for: {@code "network": {"allow": ["pypi.org", "*.pythonhosted.org"]}}, within the
 * operator's list ({@link Egress#grant}). Absent, {@code {"mode": "none"}} or an empty {@code allow} is no network at
 * all, the default.
 *
 * @param mode {@code allowlist} (the default when {@code allow} has entries) or {@code none}; null to infer it
 * @param allow {@code HOST[:PORT]} entries as {@link dev.crucible.egress.policy.EgressPolicy} reads them (no port
 *     means 443)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record NetworkRequest(@JsonProperty("mode") Mode mode, @JsonProperty("allow") List<String> allow) {
    /** {@code mode}: {@link #wireName()} on the wire, read in any case. */
    public enum Mode {
        /** Egress to the {@code allow} entries (none when there are none). */
        ALLOWLIST,
        /** No network, whatever else is asked. */
        NONE;

        @JsonValue
        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /**
         * The mode named {@code name}, in any case.
         *
         * @throws IllegalArgumentException naming the modes there are
         */
        @JsonCreator
        public static Mode named(String name) {
            Mode found = WireNames.find(values(), Mode::wireName, name);
            if (found == null) {
                throw new IllegalArgumentException("network mode is allowlist or none");
            }
            return found;
        }
    }

    public NetworkRequest {
        allow = allow == null ? null : List.copyOf(allow);
    }

    /** Egress to {@code entries}. */
    public static NetworkRequest allow(List<String> entries) {
        return new NetworkRequest(null, entries);
    }
}
