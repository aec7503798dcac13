package dev.crucible.server.access;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.FakeClock;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Admission by itself, on a clock the test moves: no sleeping for a grace period. */
class AdmissionTest {
    private final FakeClock clock = FakeClock.atNow();

    /** Drains until {@code grace} from the clock's time now (read here, so the test's advances all count). */
    private CompletableFuture<Boolean> drainInBackground(Admission admission, Duration grace) {
        CompletableFuture<Boolean> drained = new CompletableFuture<>();
        Instant deadline = clock.instant().plus(grace);
        Thread.ofVirtual().start(() -> {
            try {
                drained.complete(admission.awaitDrainedUntil(deadline));
            } catch (Throwable e) {
                drained.completeExceptionally(e);
            }
        });
        return drained;
    }

    @Test
    void aDrainEndsWhenTheLastTurnEndsWithoutWaitingForItsGrace() throws Exception {
        Admission admission = new Admission(2, 0, clock);
        AutoCloseable turn = admission.enter();
        admission.close();
        CompletableFuture<Boolean> drained = drainInBackground(admission, Duration.ofHours(1));
        assertThat(drained).isNotDone();
        turn.close();
        assertThat(drained.get(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aDrainGivesUpOnceItsGraceHasPassedOnTheClock() throws Exception {
        Admission admission = new Admission(1, 0, clock);
        AutoCloseable turn = admission.enter();
        admission.close();
        CompletableFuture<Boolean> drained = drainInBackground(admission, Duration.ofSeconds(10));
        clock.advance(Duration.ofSeconds(9));
        assertThat(drained).isNotDone();
        clock.advance(Duration.ofSeconds(2));
        assertThat(drained.get(30, TimeUnit.SECONDS)).isFalse();
        assertThat(admission.running()).isEqualTo(1);
        turn.close();
        assertThat(admission.awaitDrained(Duration.ZERO)).isTrue();
    }

    @Test
    void beyondTheQueueIsTooManyRequestsAndAfterCloseShuttingDown() throws Exception {
        Admission admission = new Admission(1, 0, clock);
        try (AutoCloseable turn = admission.enter()) {
            assertThatThrownBy(admission::enter).isInstanceOfSatisfying(RequestException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_REQUESTS));
            assertThat(admission.queued()).isZero();
        }
        admission.close();
        assertThatThrownBy(admission::enter).isInstanceOfSatisfying(RequestException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.SHUTTING_DOWN));
        assertThat(admission.busy()).isFalse();
    }
}
