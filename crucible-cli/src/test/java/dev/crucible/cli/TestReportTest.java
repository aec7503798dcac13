package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/test-report.py}, the last lines of {@code ./run-tests}: it counts what ran and what was skipped by
 * reason, names the capabilities the tests probed, and fails a promising run on a skip {@code .ci/allowed-skips}
 * does not list.
 */
class TestReportTest {
    static final Path SCRIPT = Path.of("..", "scripts", "test-report.py").toAbsolutePath().normalize();

    record Result(int exit, String output) {}

    static Result report(Path root, String promise) throws Exception {
        Capability.PYTHON3.require();
        ProcessBuilder b = new ProcessBuilder("/usr/bin/python3", SCRIPT.toString(), "--root", root.toString())
                .redirectErrorStream(true);
        b.environment().put("CRUCIBLE_TEST_PROMISE", promise);
        Process p = b.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Result(p.exitValue(), out);
    }

    static Path module(Path root) throws Exception {
        Path reports = Files.createDirectories(root.resolve("mod/target/surefire-reports"));
        Files.writeString(reports.resolve("TEST-dev.x.FooTest.xml"), """
                <testsuite name="dev.x.FooTest">
                  <testcase classname="dev.x.FooTest" name="runs"/>
                  <testcase classname="dev.x.FooTest" name="needsV1"><skipped message="skipped: needs cgroup-v1: v2 here"/></testcase>
                  <testcase classname="dev.x.FooTest" name="breaks"><failure message="boom"/></testcase>
                </testsuite>
                """);
        Files.writeString(root.resolve("mod/target/test-capabilities.tsv"),
                "root\tpresent\tpromised\t\nhaproxy\tmissing\tpromised\tno haproxy (apt-get install haproxy)\n");
        Files.createDirectories(root.resolve(".ci"));
        return root;
    }

    @Test
    void theLastLinesSayWhatRanWhatWasSkippedByReasonAndWhichCapabilitiesWerePresent(@TempDir Path root)
            throws Exception {
        Files.writeString(module(root).resolve(".ci/allowed-skips"), "FooTest#needsV1\tneeds cgroup-v1\ta v2 host\n");
        Result r = report(root, "all");
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output().lines().toList()).containsSubsequence(
                "crucible tests: 3 tests: 1 passed, 1 failed, 1 skipped",
                "  skipped 1: skipped: needs cgroup-v1: v2 here",
                "crucible tests: capabilities present: root",
                "crucible tests: capabilities missing: haproxy (no haproxy (apt-get install haproxy))");
    }

    @Test
    void aSkipNotListedFailsAPromisingRunAndIsNamed(@TempDir Path root) throws Exception {
        module(root);
        Result promising = report(root, "all");
        assertThat(promising.exit()).as(promising.output()).isEqualTo(1);
        assertThat(promising.output()).contains("not listed in .ci/allowed-skips", "FooTest#needsV1: skipped: needs");
        assertThat(report(root, "").exit()).as("a run that promises nothing may skip").isZero();
    }

    @Test
    void theRepositorysOwnListIsWellFormed() throws Exception {
        List<String> entries = Files.readAllLines(SCRIPT.getParent().resolveSibling(".ci/allowed-skips")).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
        assertThat(entries).isNotEmpty().allSatisfy(l -> assertThat(l.split("\t")).as(l).hasSize(3));
    }
}
