package dev.crucible.testhost;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import org.opentest4j.TestAbortedException;

/**
 * The run's promise ({@value #VARIABLE}) and what a missing capability does under it; every probe's answer is written
 * to {@code target/test-capabilities.tsv} of the module, for {@code scripts/test-report.py}'s last lines.
 */
final class Promises {
    /** The environment variable that carries the run's promise. */
    static final String VARIABLE = "CRUCIBLE_TEST_PROMISE";

    private static final Set<String> logged = new HashSet<>();

    private Promises() {}

    /** Records the probe, then decides under this run's promise (see {@link #check}). */
    static void require(Capability capability, String missing) {
        record(capability, missing);
        check(capability, missing, System.getenv(VARIABLE));
    }

    /**
     * The decision alone: nothing when {@code missing} is null; an {@link AssertionError} when {@code promise}
     * promises the capability; else a {@link TestAbortedException} (a skip) whose message names it and says why.
     */
    static void check(Capability capability, String missing, String promise) {
        if (missing == null) {
            return;
        }
        if (promised(capability, promise)) {
            throw new AssertionError("this run promises " + capability.wireName() + " (" + VARIABLE + "=" + promise
                    + ") but the host lacks it: " + missing);
        }
        throw new TestAbortedException("skipped: needs " + capability.wireName() + ": " + missing);
    }

    static boolean promised(Capability capability, String promise) {
        if (!capability.promisable() || promise == null || promise.isBlank()) {
            return false;
        }
        return Arrays.stream(promise.split(",")).map(s -> s.strip().toLowerCase(Locale.ROOT))
                .anyMatch(s -> s.equals("all") || s.equals(capability.wireName()));
    }

    private static synchronized void record(Capability capability, String missing) {
        String line = capability.wireName() + "\t" + (missing == null ? "present" : "missing") + "\t"
                + (promised(capability, System.getenv(VARIABLE)) ? "promised" : "not-promised") + "\t"
                + (missing == null ? "" : missing.replace('\t', ' ').replace('\n', ' ')) + "\n";
        if (!logged.add(line)) {
            return;
        }
        try {
            Path target = Files.createDirectories(Path.of("target"));
            Files.writeString(target.resolve("test-capabilities.tsv"), line, StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            // the report loses a line; the test's own outcome is unchanged
        }
    }
}
