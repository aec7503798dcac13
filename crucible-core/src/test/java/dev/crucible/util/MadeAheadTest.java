package dev.crucible.util;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Things made ahead (the spare sessions' mechanism): made up to the target behind each take, never by a maker that
 * cannot make one now or fails (one try per fill, not a loop), and every one made and not taken discarded at close,
 * one being made included.
 */
class MadeAheadTest {
    private static void awaitReady(MadeAhead<?> ahead, int n) {
        await("made ahead").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
                .until(() -> ahead.ready() == n);
    }

    @Test
    void whatIsTakenIsMadeAgainUpToTheTargetAndOnlyWhatFitsIsTaken() {
        AtomicInteger made = new AtomicInteger();
        List<Integer> discarded = new CopyOnWriteArrayList<>();
        try (MadeAhead<Integer> ahead = new MadeAhead<>("numbers", 2, made::incrementAndGet, discarded::add)) {
            assertThat(ahead.ready()).as("nothing before the first fill").isZero();
            ahead.fill();
            awaitReady(ahead, 2);
            assertThat(ahead.take(n -> n > 100)).as("none fits").isNull();
            assertThat(ahead.take(n -> n == 2)).isEqualTo(2);
            awaitReady(ahead, 2);
            assertThat(made.get()).isEqualTo(3);
            assertThat(ahead.discardOne()).isTrue();
            assertThat(discarded).containsExactly(1);
            awaitReady(ahead, 1); // a discard alone makes none: the next fill does
            ahead.discardIf(n -> n == 3); // gone bad while it waited: discarded, and another made
            awaitReady(ahead, 2);
            assertThat(discarded).containsExactly(1, 3);
        }
        assertThat(discarded).as("the rest at close").containsExactlyInAnyOrder(1, 3, 4, 5);
    }

    @Test
    void eachKindIsKeptByItsOwnMakerAndOneThatCannotLeavesTheOthersMade() {
        AtomicInteger js = new AtomicInteger();
        AtomicInteger refusals = new AtomicInteger();
        MadeAhead.Maker<String> python = () -> "python";
        try (MadeAhead<String> ahead = new MadeAhead<>("kinds", List.of(python, python,
                () -> "javascript-" + js.incrementAndGet(), () -> {
                    refusals.incrementAndGet();
                    return null; // this kind cannot be made now
                }), s -> { })) {
            ahead.fill();
            awaitReady(ahead, 3);
            assertThat(refusals.get()).as("tried once, the others made all the same").isEqualTo(1);
            assertThat(ahead.take(s -> s.startsWith("javascript"))).isEqualTo("javascript-1");
            awaitReady(ahead, 3);
            assertThat(ahead.take(s -> s.startsWith("javascript"))).as("that kind made again, not another")
                    .isEqualTo("javascript-2");
            assertThat(ahead.take(s -> s.equals("python"))).isEqualTo("python");
            awaitReady(ahead, 3);
        }
    }

    @Test
    void aMakerThatCannotOrFailsIsTriedOncePerFill() {
        AtomicInteger tries = new AtomicInteger();
        try (MadeAhead<String> none = new MadeAhead<>("nothing", 3, () -> {
            tries.incrementAndGet();
            return null; // a cap reached
        }, s -> { })) {
            none.fill();
            await().atMost(Duration.ofSeconds(10)).until(() -> tries.get() == 1);
            assertThat(none.take(s -> true)).isNull(); // a take fills again: one more try
            await().atMost(Duration.ofSeconds(10)).until(() -> tries.get() == 2);
            assertThat(none.ready()).isZero();
        }
        AtomicInteger failures = new AtomicInteger();
        try (MadeAhead<String> failing = new MadeAhead<>("failures", 3, () -> {
            failures.incrementAndGet();
            throw new IllegalStateException("the host cannot");
        }, s -> { })) {
            failing.fill();
            await().atMost(Duration.ofSeconds(10)).until(() -> failures.get() == 1);
            failing.fill();
            await().atMost(Duration.ofSeconds(10)).until(() -> failures.get() == 2);
            assertThat(failing.ready()).isZero();
        }
        assertThat(tries.get()).as("nothing more after close").isEqualTo(2);
        assertThat(failures.get()).isEqualTo(2);
    }

    @Test
    void oneBeingMadeAtCloseIsFinishedThenDiscarded() throws Exception {
        CountDownLatch making = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> discarded = new CopyOnWriteArrayList<>();
        MadeAhead<String> ahead = new MadeAhead<>("slow", 1, () -> {
            making.countDown();
            assertThat(release.await(10, TimeUnit.SECONDS)).isTrue();
            return "late";
        }, discarded::add);
        ahead.fill();
        assertThat(making.await(10, TimeUnit.SECONDS)).isTrue();
        Thread closer = Thread.ofPlatform().start(ahead::close);
        release.countDown();
        closer.join(10_000);
        assertThat(closer.isAlive()).isFalse();
        assertThat(discarded).as("discarded before close returned").containsExactly("late");
        assertThat(ahead.ready()).isZero();
        ahead.fill(); // closed: nothing is made
        assertThat(ahead.take(s -> true)).isNull();
    }

    /** What is made ahead yields the cores: the making thread, and a process it starts, run at nice 10. */
    @Test
    void theMakingThreadAndWhatItStartsRunAtALowerPriority() throws Exception {
        try (MadeAhead<String> ahead = new MadeAhead<>("niceness", 1, () -> {
            String thread = Files.readString(Path.of("/proc/thread-self/stat"));
            Process child = new ProcessBuilder("sh", "-c", "cut -d' ' -f19 /proc/self/stat").start();
            String started = new String(child.getInputStream().readAllBytes()).trim();
            child.waitFor();
            return niceOf(thread) + " " + started;
        }, s -> { })) {
            ahead.fill();
            awaitReady(ahead, 1);
            assertThat(ahead.take(s -> true)).isEqualTo(MadeAhead.BACKGROUND_NICE + " " + MadeAhead.BACKGROUND_NICE);
        }
        String self = Files.readString(Path.of("/proc/thread-self/stat"));
        assertThat(niceOf(self)).as("the caller's thread keeps its priority").isZero();
    }

    /** The nice value in a /proc stat line (the 19th field; the command name, in parentheses, may hold spaces). */
    private static int niceOf(String stat) {
        return Integer.parseInt(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[16]);
    }
}
