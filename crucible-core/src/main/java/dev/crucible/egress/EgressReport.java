package dev.crucible.egress;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.proxy.EgressDecision;
import dev.crucible.egress.proxy.EgressProxy;
import java.util.List;

/**
 * A sandbox's egress as a result or a session's info shows it: the list it was granted and the connections its proxy
 * judged (the latest, oldest first; a refusal has a {@code reason} other than {@code allowed}).
 *
 * @param allow the granted entries in canonical form ({@code host:port}); empty once a session has locked its egress
 * @param connections the proxy's decisions
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record EgressReport(@JsonProperty("allow") List<String> allow,
        @JsonProperty("connections") List<Connection> connections) {

    /**
     * One judged request.
     *
     * @param reason {@code allowed} or why it was refused ({@code not_listed}, {@code port_not_listed},
     *     {@code forbidden_address}, …)
     * @param ending how an allowed connection ended, null for a refusal
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Connection(
            @JsonProperty("at") String at,
            @JsonProperty("method") String method,
            @JsonProperty("host") String host,
            @JsonProperty("port") int port,
            @JsonProperty("allowed") boolean allowed,
            @JsonProperty("reason") String reason,
            @JsonProperty("address") String address,
            @JsonProperty("address_class") String addressClass,
            @JsonProperty("ending") String ending,
            @JsonProperty("bytes_sent") long bytesSent,
            @JsonProperty("bytes_received") long bytesReceived) {

        static Connection of(EgressDecision d) {
            return new Connection(d.at().toString(), d.method(), d.host(), d.port(), d.allowed(), d.reason().wireName(),
                    d.address() == null ? null : d.address().getHostAddress(),
                    d.addressClass() == null ? null : d.addressClass().wireName(),
                    d.ending() == null ? null : d.ending().wireName(), d.bytesSent(), d.bytesReceived());
        }
    }

    /** What {@code proxy} allows now and what it has judged. */
    public static EgressReport of(EgressProxy proxy) {
        return new EgressReport(proxy.policy().entries(), proxy.decisions().stream().map(Connection::of).toList());
    }
}
