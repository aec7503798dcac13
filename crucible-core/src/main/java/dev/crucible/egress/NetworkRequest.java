package dev.crucible.egress;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

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
public record NetworkRequest(@JsonProperty("mode") String mode, @JsonProperty("allow") List<String> allow) {
    public NetworkRequest {
        allow = allow == null ? null : List.copyOf(allow);
    }

    /** Egress to {@code entries}. */
    public static NetworkRequest allow(List<String> entries) {
        return new NetworkRequest(null, entries);
    }
}
