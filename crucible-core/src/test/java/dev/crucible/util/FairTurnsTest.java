package dev.crucible.util;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Fair turns by themselves, with real threads that wait for their turns and a ticker the test moves: the order turns
 * are given in, every refusal's reason and Retry-After, and nothing held after a wait that ended without a turn.
 */
class FairTurnsTest {
    private final AtomicLong nanos = new AtomicLong();

    private FairTurns turns(int running, int queued, int runningPerKey, int queuedPerKey) {
        return new FairTurns("runs", new FairTurns.Limits(running, queued, runningPerKey, queuedPerKey),
                key -> key.startsWith("heavy") ? 2 : 1, nanos::get);
    }

    /** Waits (bounded) until {@code state} holds: the threads under test get there in their own time. */
    private static void await(BooleanSupplier state) throws InterruptedException {
        await(state, () -> "");
    }

    private static void await(BooleanSupplier state, Supplier<String> seen)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!state.getAsBoolean()) {
            assertThat(System.nanoTime()).as(() -> "waited 30 s for a state that never came: " + seen.get())
                    .isLessThan(end);
            Thread.sleep(1);
        }
    }

    /** A request of {@code key} in a thread of its own; {@code order} hears the key when its turn comes. */
    private static CompletableFuture<FairTurns.Turn> request(FairTurns turns, String key, List<String> order) {
        CompletableFuture<FairTurns.Turn> got = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                FairTurns.Turn turn = turns.enter(key, 60_000);
                got.complete(turn); // first: a key in the order is a turn the test can end
                order.add(key);
            } catch (Throwable e) {
                got.completeExceptionally(e);
            }
        });
        return got;
    }

    /** Lines up {@code count} requests of {@code key}, each waiting before the next is sent. */
    private static List<CompletableFuture<FairTurns.Turn>> lineUp(FairTurns turns, String key, int count,
            List<String> order) throws InterruptedException {
        List<CompletableFuture<FairTurns.Turn>> line = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int before = turns.stats().queued();
            line.add(request(turns, key, order));
            await(() -> turns.stats().queued() == before + 1);
        }
        return line;
    }

    @Test
    void anotherKeysSingleRequestGetsTheNextTurnAheadOfABurst() throws Exception {
        FairTurns turns = turns(1, 100, 1, 100);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        FairTurns.Turn first = turns.enter("burst", 0);
        List<CompletableFuture<FairTurns.Turn>> burst = lineUp(turns, "burst", 20, order);
        CompletableFuture<FairTurns.Turn> quiet = request(turns, "quiet", order);
        await(() -> turns.stats().queued() == 21);
        assertThat(turns.stats().keysWaiting()).isEqualTo(2);

        first.close();
        burst.getFirst().get(30, TimeUnit.SECONDS).close(); // the burst's first waiter came first: its turn, once
        quiet.get(30, TimeUnit.SECONDS).close();
        for (CompletableFuture<FairTurns.Turn> next : burst.subList(1, burst.size())) {
            next.get(30, TimeUnit.SECONDS).close();
        }
        assertThat(order.subList(0, 2)).as("one of the burst's, then the quiet key's, not after 19 more")
                .containsExactly("burst", "quiet");
        assertThat(turns.stats().running()).isZero();
        assertThat(turns.stats().queued()).isZero();
    }

    /**
     * The CPU a key's turns weigh together is one key's share while another key holds turns too, and follows the turns
     * as they come and go: a quiet key's single turn is not outweighed 3 to 1, and the burst is whole again after it.
     */
    @Test
    void aTurnsShareOfTheCpuIsItsKeysSplitOverTheTurnsItHoldsWhileAnotherKeyHoldsOne() throws Exception {
        FairTurns turns = turns(4, 100, 4, 100);
        FairTurns.Turn first = turns.enter("burst", 0);
        FairTurns.Turn second = turns.enter("burst", 0);
        assertThat(List.of(first.share(), second.share())).as("one key alone weighs whole turns").containsOnly(100);
        FairTurns.Turn quiet = turns.enter("quiet", 0);
        assertThat(quiet.share()).isEqualTo(100);
        assertThat(List.of(first.share(), second.share())).as("2 of burst's beside quiet's 1").containsOnly(50);
        FairTurns.Turn third = turns.enter("burst", 0);
        assertThat(List.of(first.share(), second.share(), third.share())).containsOnly(33);
        assertThat(quiet.share()).isEqualTo(100);
        quiet.close();
        assertThat(List.of(first.share(), second.share(), third.share())).as("quiet has gone").containsOnly(100);
        second.close();
        FairTurns.Turn back = turns.enter("quiet", 0);
        assertThat(List.of(first.share(), third.share())).containsOnly(50);
        for (FairTurns.Turn t : List.of(first, third, back)) {
            t.close();
        }
        assertThat(turns.stats().running()).isZero();
    }

    @Test
    void aKeyOfWeightTwoIsGivenTwoTurnsForEveryOneOfAKeyOfWeightOne() throws Exception {
        FairTurns turns = turns(1, 100, 1, 100);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        FairTurns.Turn first = turns.enter("x", 0);
        List<CompletableFuture<FairTurns.Turn>> all = new ArrayList<>(lineUp(turns, "heavy", 4, order));
        all.addAll(lineUp(turns, "light", 2, order));
        first.close();
        for (int i = 0; i < all.size(); i++) { // each turn given is ended before the next is given
            int given = i;
            await(() -> order.size() >= given + 1, () -> order + " " + turns.stats());
            all.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).forEach(f -> f.join().close());
        }
        assertThat(order).containsExactly("heavy", "heavy", "light", "heavy", "heavy", "light");
    }

    @Test
    void aKeyAtItsOwnCapLetsTheNextKeyTakeAFreeTurn() throws Exception {
        FairTurns turns = turns(3, 100, 2, 100);
        FairTurns.Turn a = turns.enter("a", 0);
        FairTurns.Turn b = turns.enter("a", 0);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<FairTurns.Turn> third = request(turns, "a", order);
        await(() -> turns.stats().queued() == 1);
        assertThat(third).as("a holds its two").isNotDone();
        FairTurns.Turn other = turns.enter("b", 0); // the free turn, though a waits: a may not take it
        assertThat(turns.stats().running()).isEqualTo(3);
        a.close();
        third.get(30, TimeUnit.SECONDS).close();
        b.close();
        other.close();
        assertThat(turns.stats().running()).isZero();
    }

    @Test
    void aFullQueueAndAFullShareAreRefusedSayingWhichAndWhenToComeBack() throws Exception {
        FairTurns turns = turns(1, 3, 1, 2);
        FairTurns.Turn held = turns.enter("a", 0);
        nanos.addAndGet(TimeUnit.SECONDS.toNanos(4));
        held.close(); // a turn was held 4 s: the estimate from now on
        held = turns.enter("a", 0);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<FairTurns.Turn>> waiting = new ArrayList<>(lineUp(turns, "a", 2, order));
        assertThatThrownBy(() -> turns.enter("a", 60_000)).isInstanceOfSatisfying(RequestException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_REQUESTS);
            assertThat(e.getMessage()).contains("this token has 2 runs waiting already").contains("retry in 12 s");
            assertThat(e.retryAfterSeconds()).as("2 ahead and this one, 4 s each, one at a time").isEqualTo(12);
        });
        waiting.addAll(lineUp(turns, "b", 1, order));
        assertThatThrownBy(() -> turns.enter("c", 60_000)).isInstanceOfSatisfying(RequestException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_REQUESTS);
            assertThat(e.getMessage()).contains("the queue of runs is full (1 running, 3 waiting");
            assertThat(e.retryAfterSeconds()).isEqualTo(16);
        });
        assertThat(turns.stats().refused(FairTurns.Refusal.KEY_QUEUE_FULL)).isEqualTo(1);
        assertThat(turns.stats().refused(FairTurns.Refusal.QUEUE_FULL)).isEqualTo(1);
        held.close();
        for (int i = 0; i < waiting.size(); i++) { // each turn, in the order given, ended before the next is given
            int given = i;
            await(() -> order.size() >= given + 1, () -> order + " " + turns.stats());
            waiting.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).forEach(f -> f.join().close());
        }
        assertThat(order).as("a's, then b's though a came first, then a's").containsExactly("a", "b", "a");
        assertThat(turns.stats().given()).isEqualTo(5);
    }

    @Test
    void aWaitThatEndsWithoutATurnLeavesTheQueueAndHoldsNothing() throws Exception {
        FairTurns turns = turns(1, 10, 1, 10);
        FairTurns.Turn held = turns.enter("a", 0);
        assertThatThrownBy(() -> turns.enter("b", 50)).isInstanceOfSatisfying(RequestException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.QUEUE_TIMEOUT);
            assertThat(e.retryAfterSeconds()).isPositive();
        });
        assertThat(turns.stats().queued()).isZero();
        assertThat(turns.stats().keysWaiting()).isZero();

        CompletableFuture<Void> interrupted = new CompletableFuture<>();
        Thread waiter = Thread.ofVirtual().start(() -> {
            try {
                turns.enter("c", 60_000).close();
                interrupted.completeExceptionally(new AssertionError("got a turn"));
            } catch (InterruptedException e) {
                interrupted.complete(null);
            } catch (Throwable e) {
                interrupted.completeExceptionally(e);
            }
        });
        await(() -> turns.stats().queued() == 1);
        waiter.interrupt();
        interrupted.get(30, TimeUnit.SECONDS);
        assertThat(turns.stats().queued()).isZero();
        held.close();
        assertThat(turns.stats().running()).isZero();
        assertThat(turns.stats().refused(FairTurns.Refusal.WAIT_TIMEOUT)).isEqualTo(1);
        turns.close();
        assertThatThrownBy(() -> turns.enter("a", 0)).isInstanceOfSatisfying(RequestException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.SHUTTING_DOWN));
        assertThat(turns.awaitIdle(0)).isTrue();
    }
}
