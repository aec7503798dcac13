package dev.crucible.exec;


import dev.crucible.TestHost;
import dev.crucible.runtime.LimitsSpec;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The runtime matrix behind gVisor (issue 29): every built-in runtime compiles and runs behind gVisor's kernel with the
 * same verdicts as behind namespaces (hello, compile and syntax errors, crashes, timeouts, memory and output limits).
 */
class RuntimeMatrixUnderGvisorTest extends RuntimeMatrixTest {
    @BeforeAll
    static void gvisorRunsHere() {
        TestHost.assumeGvisor("RuntimeMatrixUnderGvisorTest");
    }

    @Override
    String isolation() {
        return "gvisor";
    }

    /**
     * As behind namespaces, but Bash's hog (400 MB through a pipe into a command substitution) moves about 20 MB/s
     * through gVisor's kernel on the ptrace platform: within its 30 s it may meet the wall clock before the memory
     * limit. Either ends it; the other runtimes allocate without a pipe and meet the memory limit.
     */
    @Override
    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void memoryHogMeetsTheMemoryLimit(String language, Programs p) throws Exception {
        if (!language.equals("bash")) {
            super.memoryHogMeetsTheMemoryLimit(language, p);
            return;
        }
        ExecuteResult r = run(language, p.hog(), new LimitsSpec(UNTIMED_MS, UNTIMED_MS, 128, null,
                null));
        Assertions.assertThat(r.status().wireName()).as(r.toString())
                .isIn("memory_limit", "timeout");
        Assertions.assertThat(r.stdout()).as("the 400 MB string was never built").isEmpty();
    }
}
