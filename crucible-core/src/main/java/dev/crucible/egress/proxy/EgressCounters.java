package dev.crucible.egress.proxy;

import dev.crucible.egress.policy.EgressReason;
import java.util.Map;

/**
 * Totals over an {@link EgressProxy}'s life.
 *
 * @param byReason requests judged, by reason (every reason present, zero included)
 * @param bytesSent bytes relayed from the sandbox to targets
 * @param bytesReceived bytes relayed from targets to the sandbox
 * @param open connections open now
 */
public record EgressCounters(Map<EgressReason, Long> byReason, long bytesSent, long bytesReceived, int open) {
    public EgressCounters {
        byReason = Map.copyOf(byReason);
    }

    public long allowed() {
        return byReason.get(EgressReason.ALLOWED);
    }

    public long refused() {
        return byReason.entrySet().stream().filter(e -> !e.getKey().allowed()).mapToLong(Map.Entry::getValue).sum();
    }
}
