package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.testhost.Capability;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** For every built-in runtime: hello world, a compile error, a runtime error, a timeout, memory and output limits. */
class RuntimeMatrixTest {

    /** One program per behaviour for a language; {@code badSyntax} is a compile error or, interpreted, a syntax error. */
    record Programs(String language, String hello, String badSyntax, String crash, String spin, String hog, String flood) {}

    static final List<Programs> PROGRAMS = List.of(
            new Programs("python", "print('hello')", "print('unclosed'", "raise ValueError('boom')",
                    "while True: pass", "x = b'x' * (400 << 20)\nprint(len(x))", "while True: print('y' * 1000)"),
            new Programs("javascript", "console.log('hello')", "console.log('unclosed'",
                    "throw new Error('boom')", "for (;;) {}", "const b = Buffer.alloc(400 * 1024 * 1024, 1); console.log(b.length)",
                    "for (;;) console.log('y'.repeat(1000))"),
            new Programs("bash", "echo hello", "if then fi (", "echo boom >&2; exit 3", "while :; do :; done",
                    "s=$(head -c 400M /dev/zero | tr '\\0' a); echo ${#s}", "yes"),
            new Programs("c", "#include <stdio.h>\nint main(void){puts(\"hello\");return 0;}",
                    "int main(void){ return undefined_name; }",
                    "#include <stdio.h>\nint main(void){fputs(\"boom\\n\", stderr); return 3;}",
                    "int main(void){ for(;;); }",
                    "#include <stdlib.h>\n#include <string.h>\nint main(void){ for(;;){ char*p=malloc(1<<24); memset(p,1,1<<24);} }",
                    "#include <stdio.h>\nint main(void){ for(;;) puts(\"yyyyyyyyyyyyyyyyyyyy\"); }"),
            new Programs("cpp", "#include <iostream>\nint main(){ std::cout << \"hello\" << std::endl; }",
                    "int main(){ std::cout << 1; }",
                    "#include <stdexcept>\nint main(){ throw std::runtime_error(\"boom\"); }",
                    "int main(){ volatile int x = 0; for(;;) x++; }",
                    "#include <vector>\n#include <cstring>\nint main(){ std::vector<char*> v; for(;;){ char*p=new char[1<<24];"
                            + " std::memset(p,1,1<<24); v.push_back(p);} }",
                    "#include <iostream>\nint main(){ for(;;) std::cout << \"yyyyyyyyyyyyyyyyyyyy\\n\"; }"),
            new Programs("java", "public class Main { public static void main(String[] a) { System.out.println(\"hello\"); } }",
                    "public class Main { public static void main(String[] a) { int x = \"s\"; } }",
                    "public class Main { public static void main(String[] a) { throw new IllegalStateException(\"boom\"); } }",
                    "public class Main { public static void main(String[] a) { while (true) {} } }",
                    "import java.util.*; public class Main { public static void main(String[] a) {"
                            + " List<long[]> l = new ArrayList<>(); while (true) l.add(new long[1 << 20]); } }",
                    "public class Main { public static void main(String[] a) { while (true) System.out.println(\"yyyyyyyyyyyy\"); } }"));

    /**
     * The limits of every behaviour but the timeout: the wall clock and CPU time are not what they test, so they are
     * generous enough (30 s) that a loaded host (or gVisor's slower start) meets the outcome under test first.
     */
    static final long UNTIMED_MS = HostileCasesTest.UNTIMED_MS;
    static final LimitsSpec UNTIMED = new LimitsSpec(UNTIMED_MS, UNTIMED_MS, null, null, null);

    static Stream<Arguments> programs() {
        return PROGRAMS.stream().map(p -> Arguments.of(p.language(), p));
    }

    /** The tier the matrix runs behind (null: each runtime's own); {@link RuntimeMatrixUnderGvisorTest} asks gVisor. */
    String isolation() {
        return null;
    }

    ExecuteResult run(String language, String code, LimitsSpec limits) throws InterruptedException {
        ExecuteResult r = TestHost.crucible().executor().execute(new ExecuteRequest(language, code, null, null, null,
                limits).withIsolation(isolation()));
        assertThat(r.isolation()).isEqualTo(isolation() == null ? "namespaces" : isolation());
        return r;
    }

    @AfterEach
    void nothingLeft() throws Exception {
        TestHost.assertNothingLeft();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void helloWorldIsOk(String language, Programs p) throws Exception {
        ExecuteResult r = run(language, p.hello(), UNTIMED);
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        assertThat(r.exitCode()).isZero();
        assertThat(r.stdout()).isEqualTo("hello\n");
        assertThat(r.cpuMs()).isGreaterThanOrEqualTo(0);
        assertThat(r.memoryBytes()).isPositive();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void badSyntaxIsACompileErrorOrASyntaxError(String language, Programs p) throws Exception {
        ExecuteResult r = run(language, p.badSyntax(), UNTIMED);
        boolean compiled = TestHost.crucible().runtimes().find(language).orElseThrow().compiled();
        if (compiled) {
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("compile_error");
            assertThat(r.compile().status().wireName()).isEqualTo("runtime_error");
            assertThat(r.compile().stdout() + r.compile().stderr()).containsIgnoringCase("error");
            assertThat(r.exitCode()).as("the program never ran").isNull();
        } else {
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("runtime_error");
            assertThat(r.stderr()).containsIgnoringCase("syntax");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void crashIsARuntimeError(String language, Programs p) throws Exception {
        ExecuteResult r = run(language, p.crash(), UNTIMED);
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("runtime_error");
        assertThat(r.exitCode()).isNotZero();
        assertThat(r.stderr()).contains("boom");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void endlessLoopIsATimeout(String language, Programs p) throws Exception {
        ExecuteResult r = run(language, p.spin(), new LimitsSpec(1500L, null, null, null, null));
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("timeout");
        assertThat(r.signal()).isEqualTo(9);
    }

    /**
     * Java's heap is capped below the cgroup limit ({@code -Xmx} = half), so the JVM reports a clean, catchable
     * {@code OutOfMemoryError} (runtime_error) instead of being killed; everything else meets the cgroup.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void memoryHogMeetsTheMemoryLimit(String language, Programs p) throws Exception {
        boolean cgroups = TestHost.crucible().sandbox().host().describe().stream().noneMatch(l -> l.startsWith("cgroups: none"));
        Capability.CGROUPS.require(cgroups ? null
                : "no writable cgroup on this host (not root?): memory is bounded by RLIMIT_AS only, memory_limit is not reported");
        ExecuteResult r = run(language, p.hog(), new LimitsSpec(UNTIMED_MS, UNTIMED_MS, 128, null, null));
        if (language.equals("java")) {
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("runtime_error");
            assertThat(r.stderr()).contains("OutOfMemoryError");
        } else {
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("memory_limit");
            assertThat(r.memoryBytes()).isGreaterThan(100L << 20);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void outputFloodMeetsTheOutputLimit(String language, Programs p) throws Exception {
        ExecuteResult r = run(language, p.flood(), new LimitsSpec(UNTIMED_MS, UNTIMED_MS, null, 10_000, null));
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("output_limit");
        assertThat(r.stdoutTruncated()).isTrue();
        assertThat(r.stdout()).contains("[crucible: output cap of 10000 bytes reached");
        assertThat(r.stdout().length()).isLessThan(10_000 + TAIL_KEPT + 200);
    }

    /** The tail kept after the cap (the sandbox's Output.TAIL_BYTES). */
    static final int TAIL_KEPT = 4096;
}
