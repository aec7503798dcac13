package dev.crucible.egress.proxy;

import dev.crucible.egress.address.AddressClass;
import dev.crucible.egress.policy.EgressReason;
import java.net.InetAddress;
import java.time.Instant;

/**
 * One request the egress proxy judged. A refusal is recorded when it is answered; an allowed connection when it ends
 * (so its bytes and ending are known).
 *
 * @param at when the request was judged (an allowed one: when its connection was made, not when it ended)
 * @param reason why it was allowed or refused
 * @param method {@code CONNECT}, the forwarded HTTP method, or null when the request line could not be read
 * @param host the target host as normalized (lower case), or null when the request could not be read
 * @param port the target port, 0 when unknown
 * @param address the address connected to, or the forbidden address that refused it; null otherwise
 * @param addressClass the class of {@code address} (see {@link dev.crucible.egress.address.AddressRules}); null when
 *     there is no address
 * @param ending how an allowed connection ended; null for a refusal
 * @param bytesSent bytes relayed from the sandbox to the target
 * @param bytesReceived bytes relayed from the target to the sandbox
 */
public record EgressDecision(Instant at, EgressReason reason, String method, String host, int port,
        InetAddress address, AddressClass addressClass, EgressEnding ending, long bytesSent, long bytesReceived) {
    public boolean allowed() {
        return reason.allowed();
    }
}
