package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A run's output stream under its cap, checked without starting a sandbox. */
class OutputTest {

    @Test
    void outputKeepsHeadAndTailAndSignalsOverflowOnce() {
        AtomicInteger overflows = new AtomicInteger();
        Output out = new Output(10, false, overflows::incrementAndGet);
        byte[] data = ("0123456789" + "x".repeat(10_000) + "THE-END").getBytes(StandardCharsets.UTF_8);
        out.drain(new ByteArrayInputStream(data));
        assertThat(overflows).hasValue(1);
        assertThat(out.truncated()).isTrue();
        String kept = new String(out.bytes(), StandardCharsets.UTF_8);
        assertThat(kept).startsWith("0123456789\n[crucible: output cap of 10 bytes reached; ").endsWith("xxTHE-END");
        assertThat(kept).contains((data.length - 10 - Output.TAIL_BYTES) + " bytes omitted");
    }

    @Test
    void outputUnderTheCapIsKeptWhole() {
        Output out = new Output(100, false, () -> { throw new AssertionError("no overflow"); });
        out.drain(new ByteArrayInputStream("hello".getBytes(StandardCharsets.UTF_8)));
        assertThat(out.truncated()).isFalse();
        assertThat(new String(out.bytes(), StandardCharsets.UTF_8)).isEqualTo("hello");
    }

    @Test
    void whatWasPrintedBeforeTheRunWasClaimedStillReachesItsListenerFirst() {
        Output out = new Output(100, false, () -> { });
        out.drain(new ByteArrayInputStream("early ".getBytes(StandardCharsets.UTF_8))); // before configure
        StringBuilder streamed = new StringBuilder();
        out.configure(100, (stderr, bytes, length) -> streamed.append(new String(bytes, 0, length,
                StandardCharsets.UTF_8)));
        out.drain(new ByteArrayInputStream("late".getBytes(StandardCharsets.UTF_8)));
        assertThat(streamed).hasToString("early late");
        assertThat(new String(out.bytes(), StandardCharsets.UTF_8)).isEqualTo("early late");
    }
}
