package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./crucible}, the script users start with: it trains a JDK AOT cache once per build and starts short commands
 * with it, and nothing of that may reach a command's stdout ({@code run --json}, {@code mcp} own it). Runs a copy of
 * the script over the built JAR, so that the checkout's own cache is left alone and no build can start.
 */
class LauncherScriptIT {
    @TempDir
    Path root;
    @TempDir
    Path cache;

    @BeforeEach
    void copyTheScriptBesideTheJar() throws IOException {
        Path checkout = Path.of("..").toAbsolutePath().normalize();
        Files.copy(checkout.resolve("crucible"), root.resolve("crucible"), StandardCopyOption.COPY_ATTRIBUTES);
        Files.createDirectories(root.resolve("scripts"));
        Files.copy(checkout.resolve("scripts/common.sh"), root.resolve("scripts/common.sh"));
        Files.createDirectories(root.resolve("crucible-cli/target"));
        Files.copy(CliIT.JAR, root.resolve("crucible-cli/target/crucible.jar"), StandardCopyOption.COPY_ATTRIBUTES);
        Files.writeString(root.resolve("hello.py"), "print('hello')\n");
    }

    private CliIT.Outcome script(String... args) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of(root.resolve("crucible").toString()));
        argv.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(argv).directory(root.toFile());
        pb.environment().put("XDG_CACHE_HOME", cache.toString());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        return new CliIT.Outcome(p.exitValue(), new String(out, StandardCharsets.UTF_8),
                new String(err, StandardCharsets.UTF_8));
    }

    @Test
    void theFirstRunTrainsTheStartUpCacheAndLaterRunsUseItQuietly() throws Exception {
        CliIT.Outcome first = script("run", "hello.py");
        assertThat(first.stdout()).isEqualTo("hello\n");
        assertThat(first.stderr()).isEqualTo("crucible: preparing the start-up cache (once per build) ...\n");
        Path aot = root.resolve("crucible-cli/target/crucible.aot");
        assertThat(aot).isNotEmptyFile();
        try (var files = Files.list(aot.getParent())) {
            assertThat(files.map(f -> f.getFileName().toString())).containsExactlyInAnyOrder("crucible.jar",
                    "crucible.aot"); // no training leftovers
        }

        CliIT.Outcome second = script("run", "--json", "hello.py");
        assertThat(second.stderr()).isEmpty();
        assertThat(JsonMapper.builder().build().readTree(second.stdout())
                .path("stdout").asString()).isEqualTo("hello\n");
        assertThat(cache.resolve("crucible")).as("the seccomp program and versions kept").isDirectoryContaining(
                "glob:**/seccomp-*.bpf");
    }

    @Test
    void aCacheTheJvmCannotUseIsIgnoredWithoutAWord() throws Exception {
        Path aot = root.resolve("crucible-cli/target/crucible.aot");
        Files.write(aot, new byte[64 * 1024]); // not an AOT cache: the JVM's own complaint goes to stdout by default
        Files.setLastModifiedTime(aot, FileTime.fromMillis(System.currentTimeMillis() + 60_000)); // not retrained

        CliIT.Outcome o = script("run", "hello.py");
        assertThat(o.stdout()).isEqualTo("hello\n");
        assertThat(o.stderr()).isEmpty();
        assertThat(o.exit()).isZero();
    }
}
