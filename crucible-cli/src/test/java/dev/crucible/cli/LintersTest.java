package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The style a machine keeps beyond Java's (issue 51 item 4; Java's is Checkstyle's, in {@code verify}): the TypeScript
 * SDK and the console pass Biome (lint and format, each directory's {@code biome.json}; {@code npx biome check --write
 * .} there fixes most), and the Python client Debian's flake8 ({@code clients/python/.flake8}). Each linter is shown to refuse a
 * file that breaks its rules, so a linter that checks nothing cannot pass here.
 */
class LintersTest {
    static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    record Run(int exit, String output) {}

    static Run run(Path dir, List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).as("%s did not end", command).isTrue();
        return new Run(p.exitValue(), output);
    }

    private static Path biome() {
        Path dir = REPO.resolve("clients/typescript");
        Path biome = dir.resolve("node_modules/.bin/biome");
        Capability.NPM_CLIENTS.require(Files.isExecutable(biome) ? null
                : biome + " is missing (npm ci in clients/typescript; ./run-tests does)");
        return biome;
    }

    @ParameterizedTest
    @ValueSource(strings = {"clients/typescript", "crucible-server/src/main/console"})
    void theTypeScriptPassesBiome(String dir) throws Exception {
        Run check = run(REPO.resolve(dir), List.of(biome().toString(), "check", "--error-on-warnings", "."));
        assertThat(check.exit()).as("npx biome check --write . in %s fixes most of:\n%s", dir, check.output()).isZero();
    }

    @Test
    void biomeRefusesWhatItsRulesForbid(@TempDir Path dir) throws Exception {
        Path sdk = REPO.resolve("clients/typescript");
        Files.copy(sdk.resolve("biome.json"), dir.resolve("biome.json"));
        Files.createDirectories(dir.resolve("src"));
        Files.writeString(dir.resolve("src/bad.ts"), "export function f(a: number) {\n  debugger;\n  return a == 1;\n}\n");
        String config = Files.readString(dir.resolve("biome.json")).replace("./node_modules/", sdk + "/node_modules/");
        Files.writeString(dir.resolve("biome.json"), config);
        Run check = run(dir, List.of(biome().toString(), "check", "."));
        assertThat(check.exit()).as(check.output()).isNotZero();
        assertThat(check.output()).contains("noDebugger").contains("noDoubleEquals");
    }

    @Test
    void thePythonClientPassesFlake8() throws Exception {
        Capability.FLAKE8.require();
        Run check = run(REPO.resolve("clients/python"), List.of("flake8", "."));
        assertThat(check.exit()).as("flake8 in clients/python:\n%s", check.output()).isZero();
    }

    @Test
    void flake8RefusesWhatItsRulesForbid(@TempDir Path dir) throws Exception {
        Capability.FLAKE8.require();
        Files.copy(REPO.resolve("clients/python/.flake8"), dir.resolve(".flake8"));
        Files.writeString(dir.resolve("bad.py"), "import os\ndef f():\n    return 1\n");
        Run check = run(dir, List.of("flake8", "."));
        assertThat(check.exit()).as(check.output()).isNotZero();
        assertThat(check.output()).contains("F401").contains("E302");
    }
}
