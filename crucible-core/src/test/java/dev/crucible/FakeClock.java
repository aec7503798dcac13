package dev.crucible;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when a test says so (Guava's FakeTicker, as an {@link InstantSource}). Thread-safe. */
public final class FakeClock implements InstantSource {
    private final AtomicLong millis;

    public FakeClock(Instant start) {
        this.millis = new AtomicLong(start.toEpochMilli());
    }

    /** A clock at the real time now, from then on still. */
    public static FakeClock atNow() {
        return new FakeClock(Instant.now());
    }

    public FakeClock advance(Duration by) {
        millis.addAndGet(by.toMillis());
        return this;
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis.get());
    }

    @Override
    public long millis() {
        return millis.get();
    }
}
