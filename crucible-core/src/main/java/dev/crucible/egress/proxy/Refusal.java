package dev.crucible.egress.proxy;

import dev.crucible.egress.address.AddressClass;
import dev.crucible.egress.policy.EgressReason;
import java.net.InetAddress;

/** A request the proxy answers with {@code reason}'s status; {@code detail} (nullable) adds to the explanation. */
final class Refusal extends Exception {
    final EgressReason reason;
    final String detail;
    final InetAddress address;
    final AddressClass addressClass;

    Refusal(EgressReason reason, String detail) {
        this(reason, detail, null, null);
    }

    Refusal(EgressReason reason, String detail, InetAddress address, AddressClass addressClass) {
        super(reason.wireName() + (detail == null ? "" : ": " + detail), null, false, false);
        this.reason = reason;
        this.detail = detail;
        this.address = address;
        this.addressClass = addressClass;
    }
}
