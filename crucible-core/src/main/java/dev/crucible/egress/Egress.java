package dev.crucible.egress;

import dev.crucible.egress.policy.EgressNotAllowedException;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.policy.EgressReason;
import dev.crucible.egress.proxy.EgressCounters;
import dev.crucible.egress.proxy.EgressLimits;
import dev.crucible.egress.proxy.EgressProxy;
import dev.crucible.egress.proxy.EgressResolver;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.time.InstantSource;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The operator's egress: the widest list any sandbox may ask for ({@code serve --egress-allow}, a runtime's
 * {@code egress_allow}), and the proxies made for what requests are granted, with totals over all of them for the
 * metrics. Off ({@link #off()}) unless the operator lists something. Thread-safe.
 */
public final class Egress {
    private static final Egress OFF = new Egress(EgressPolicy.none(), EgressResolver.system(), EgressLimits.defaults(),
            InstantSource.system());

    private final EgressPolicy widest;
    private final EgressResolver resolver;
    private final EgressLimits limits;
    private final InstantSource clock;
    private final Map<EgressReason, AtomicLong> byReason = new EnumMap<>(EgressReason.class);
    private final AtomicLong bytesSent = new AtomicLong();
    private final AtomicLong bytesReceived = new AtomicLong();

    private Egress(EgressPolicy widest, EgressResolver resolver, EgressLimits limits, InstantSource clock) {
        this.widest = widest;
        this.resolver = resolver;
        this.limits = limits;
        this.clock = clock;
        for (EgressReason reason : EgressReason.values()) {
            byReason.put(reason, new AtomicLong());
        }
    }

    /** No egress: every request that asks for network is refused. */
    public static Egress off() {
        return OFF;
    }

    /** Egress within {@code widest} (plus each runtime's own list), names resolved by {@code resolver}. */
    public static Egress of(EgressPolicy widest, EgressResolver resolver, EgressLimits limits, InstantSource clock) {
        return new Egress(widest, resolver, limits, clock);
    }

    /** The server's own list (a runtime may add its {@code egress_allow}). */
    public EgressPolicy widest() {
        return widest;
    }

    /**
     * The policy a request gets: null when it asks for no network; else its entries, each within the server's list or
     * {@code runtimeAllow}.
     *
     * @param runtimeAllow the runtime's own list from the runtimes TOML ({@link EgressPolicy#none()} when it has none)
     * @throws RequestException {@code invalid_request} for a bad mode or entry; {@code egress_not_allowed} (422)
     *     naming every entry outside the lists, or saying that this server allows none
     */
    public EgressPolicy grant(NetworkRequest asked, EgressPolicy runtimeAllow) {
        return narrow(widest.union(runtimeAllow), asked, "this server allows no network egress; the operator enables it"
                + " with crucible serve --egress-allow HOST[:PORT],... (or CRUCIBLE_EGRESS_ALLOW)");
    }

    /**
     * What {@code asked} gets within {@code within}: null when it asks for no network, else its entries.
     *
     * @param whenNone the refusal's words when {@code within} is empty and entries are asked for
     * @throws RequestException as {@link #grant}
     */
    public static EgressPolicy narrow(EgressPolicy within, NetworkRequest asked, String whenNone) {
        if (asked == null) {
            return null;
        }
        boolean entries = asked.allow() != null && !asked.allow().isEmpty();
        if (asked.mode() == NetworkRequest.Mode.NONE && entries) {
            throw new RequestException(ErrorCode.INVALID_REQUEST,
                    "network: mode none takes no allow list; drop one or the other");
        }
        if (asked.mode() == NetworkRequest.Mode.NONE || !entries) {
            return null;
        }
        if (within.isNone()) {
            throw new RequestException(ErrorCode.EGRESS_NOT_ALLOWED, whenNone);
        }
        try {
            return within.narrow(asked.allow());
        } catch (EgressNotAllowedException e) {
            throw new RequestException(ErrorCode.EGRESS_NOT_ALLOWED, e.getMessage() + "; allowed: " + within);
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "network: " + e.getMessage());
        }
    }

    /** A proxy for {@code granted}; its totals are added to {@link #totals()} when it closes. */
    public EgressProxy open(EgressPolicy granted) {
        return EgressProxy.create(granted, resolver, limits, clock, this::add);
    }

    private void add(EgressCounters counters) {
        counters.byReason().forEach((reason, count) -> byReason.get(reason).addAndGet(count));
        bytesSent.addAndGet(counters.bytesSent());
        bytesReceived.addAndGet(counters.bytesReceived());
    }

    /** Requests judged by the proxies closed so far, by reason, and their bytes ({@code open} is 0). */
    public EgressCounters totals() {
        Map<EgressReason, Long> counts = new EnumMap<>(EgressReason.class);
        byReason.forEach((reason, count) -> counts.put(reason, count.get()));
        return new EgressCounters(counts, bytesSent.get(), bytesReceived.get(), 0);
    }
}
