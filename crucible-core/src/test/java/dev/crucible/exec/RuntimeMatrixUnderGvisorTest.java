package dev.crucible.exec;


import dev.crucible.TestHost;
import org.junit.jupiter.api.BeforeAll;

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
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("programs")
    void memoryHogMeetsTheMemoryLimit(String language, Programs p) throws Exception {
        if (!language.equals("bash")) {
            super.memoryHogMeetsTheMemoryLimit(language, p);
            return;
        }
        ExecuteResult r = run(language, p.hog(), new dev.crucible.runtime.LimitsSpec(UNTIMED_MS, UNTIMED_MS, 128, null,
                null));
        org.assertj.core.api.Assertions.assertThat(r.status().wireName()).as(r.toString())
                .isIn("memory_limit", "timeout");
        org.assertj.core.api.Assertions.assertThat(r.stdout()).as("the 400 MB string was never built").isEmpty();
    }
}
