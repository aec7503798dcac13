package dev.crucible.egress.proxy;

import java.util.Locale;

/** How an allowed connection ended. */
public enum EgressEnding {
    /** Both sides finished (or, for forward HTTP, the origin's response ended). */
    CLOSED,
    /** The sandbox's byte budget ran out mid-transfer: both sides were cut. */
    BYTE_CAP,
    /** Nothing moved for the idle timeout. */
    IDLE_TIMEOUT,
    /** A read or write failed (a reset, a broken pipe). */
    ERROR,
    /** The sandbox ended, or its proxy was closed, while the connection was open: both sides were closed. */
    PROXY_CLOSED,
    /** The session dropped its egress for good while the connection was open. */
    LOCKED;

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
