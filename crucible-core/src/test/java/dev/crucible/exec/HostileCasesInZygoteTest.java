package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.SandboxConfig;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * Every Python case of the hostile catalogue run in a child of the zygote (docs/zygote.md), from the warm pool the
 * zygote fills or forked for the request, with the outcome its expectation asks for, as {@link HostileCasesTest} checks
 * on the spawn path. A case whose limits a zygote does not serve (another memory limit) runs spawned and is counted
 * apart; most must run in the zygote.
 */
class HostileCasesInZygoteTest {
    static Crucible crucible;
    static WarmPool pool;
    static final AtomicInteger inZygote = new AtomicInteger();

    @BeforeAll
    static void start() {
        crucible = Crucible.start(SandboxConfig.defaults().withSlots(4), null);
        pool = crucible.startPool(Map.of("python", 1));
    }

    @AfterAll
    static void stop() throws Exception {
        crucible.close();
        long python = pythonCases().count();
        // a case with a memory limit of its own runs spawned (a zygote's box is made for the runtime's limit)
        assertThat(inZygote.get()).as("Python cases served by a zygote child").isGreaterThan((int) (python * 3 / 4));
    }

    /** The Python cases: the zygote serves Python only (every case runs on the spawn path in HostileCasesTest). */
    static Stream<Arguments> pythonCases() throws IOException {
        return HostileCasesTest.cases().filter(a -> ((JsonNode) a.get()[1]).get("language").asString()
                .equals("python"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("pythonCases")
    void pythonCaseGetsItsExpectedOutcomeInAZygoteChild(String id, JsonNode c, JsonNode expect) throws Exception {
        // a bound, not a timing
        await("a warm agent in the pool").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(10))
                .until(pool::size, n -> n >= 1);
        long served = pool.hits() + pool.forked();
        HostileCasesTest.runAndCheck(crucible.executor(), id, " (zygote)", c, expect, request -> request);
        if (pool.hits() + pool.forked() > served) {
            inZygote.incrementAndGet();
        }
        ExecuteResult next = crucible.executor().execute(ExecuteRequest.of("python", "print('alive')"));
        assertThat(next.stdout()).as("the next request is served").isEqualTo("alive\n");
    }

    @Test
    void theZygoteIsInForce() {
        assertThat(crucible.sandbox().host().describe()).anyMatch(l -> l.contains("zygote"));
    }
}
