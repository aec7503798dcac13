package dev.crucible.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.image.Images;
import dev.crucible.sandbox.Isolation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RuntimeRegistryTest {

    @Test
    void builtInRuntimesAreAllKnownByNameAliasAndExtension() {
        RuntimeRegistry registry = RuntimeRegistry.builtIn();
        assertThat(registry.list()).extracting(LanguageRuntime::language)
                .containsExactly("python", "javascript", "bash", "c", "cpp", "java");
        assertThat(registry.find("PY").orElseThrow().language()).isEqualTo("python");
        assertThat(registry.find("node").orElseThrow().language()).isEqualTo("javascript");
        assertThat(registry.forFileName("x.CPP").orElseThrow().language()).isEqualTo("cpp");
        assertThat(registry.forFileName("Makefile")).isEmpty();
        for (LanguageRuntime r : registry.list()) {
            assertThat(r.available()).as(r.language() + ": " + r.unavailableReason()).isTrue();
            assertThat(r.version()).as(r.language()).matches("\\d+(\\.\\d+)+");
            assertThat(r.runCommand().getFirst()).startsWith("/");
        }
    }

    @Test
    void userFileAddsAndReplacesRuntimesAndReportsMissingTools(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("runtimes.toml");
        Files.writeString(file, """
                [[runtime]]
                language = "python"
                file_name = "solution.py"
                run_command = ["python3", "-I", "{file}"]
                compile_command = []
                limits = { timeout_ms = 1234 }

                [[runtime]]
                language = "cobol"
                file_name = "main.cob"
                compile_command = ["cobc-not-here", "-x", "{file}"]
                run_command = ["/build/main"]
                """);
        RuntimeRegistry registry = RuntimeRegistry.load(file);
        LanguageRuntime python = registry.find("python").orElseThrow();
        assertThat(python.fileName()).isEqualTo("solution.py");
        assertThat(python.limits().timeoutMs()).isEqualTo(1234);
        assertThat(python.compiled()).isFalse();
        assertThat(python.runArgv(python.limits(), List.of("x"))).containsExactly("/usr/bin/python3", "-I",
                "solution.py", "x");
        LanguageRuntime cobol = registry.find("cobol").orElseThrow();
        assertThat(cobol.available()).isFalse();
        assertThat(cobol.unavailableReason()).contains("cobc-not-here is not installed");
        assertThat(registry.find("javascript")).isPresent();
    }

    @Test
    void invalidFilesAreRefusedWithTheFileAndTheReason(@TempDir Path dir) throws Exception {
        Path broken = dir.resolve("broken.toml");
        Files.writeString(broken, "[[runtime]\nlanguage = ");
        assertThatThrownBy(() -> RuntimeRegistry.load(broken)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid runtimes file " + broken);
        Path noRun = dir.resolve("norun.toml");
        Files.writeString(noRun, "[[runtime]]\nlanguage = \"x\"\nfile_name = \"x\"\n");
        assertThatThrownBy(() -> RuntimeRegistry.load(noRun)).hasMessageContaining("runtime x has no run_command");
        Path badLimits = dir.resolve("limits.toml");
        Files.writeString(badLimits, "[[runtime]]\nlanguage = \"x\"\nfile_name = \"x\"\nrun_command = [\"true\"]\n"
                + "limits = { memory_mb = 999999 }\n");
        assertThatThrownBy(() -> RuntimeRegistry.load(badLimits)).hasMessageContaining("runtime x: memory_mb must be between");
        assertThatThrownBy(() -> RuntimeRegistry.load(dir.resolve("absent.toml"))).hasMessageContaining("cannot read");
        Path badTier = dir.resolve("tier.toml");
        Files.writeString(badTier, "[[runtime]]\nlanguage = \"x\"\nfile_name = \"x\"\nrun_command = [\"true\"]\n"
                + "isolation = \"vm\"\n");
        assertThatThrownBy(() -> RuntimeRegistry.load(badTier))
                .hasMessageContaining("runtime x: isolation is \"namespaces\" or \"gvisor\", not \"vm\"");
    }

    @Test
    void aRuntimeNamingNoTierTakesTheServersDefaultAndOneNamingItsOwnKeepsIt(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("runtimes.toml");
        Files.writeString(file, "[[runtime]]\nlanguage = \"own\"\nfile_name = \"x\"\nrun_command = [\"true\"]\n"
                + "isolation = \"gvisor\"\n");
        RuntimeRegistry plain = RuntimeRegistry.load(file);
        assertThat(plain.find("own").orElseThrow().tier()).isEqualTo(Isolation.GVISOR);
        assertThat(plain.find("python").orElseThrow().tier()).isEqualTo(Isolation.NAMESPACES);
        RuntimeRegistry behind = RuntimeRegistry.load(file, Images.none(), Isolation.GVISOR);
        assertThat(behind.list()).allMatch(r -> r.tier() == Isolation.GVISOR);
    }

    /** A rootfs ("image") replaces the host's /usr; here an image whose usr is the host's, reached by a link. */
    @Test
    void runtimeWithARootfsRunsItsUsrInsteadOfTheHosts(@TempDir Path dir) throws Exception {
        Path image = Files.createDirectories(dir.resolve("image"));
        Files.createSymbolicLink(image.resolve("usr"), Path.of("/usr"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path file = dir.resolve("runtimes.toml");
        Files.writeString(file, "[[runtime]]\nlanguage = \"imgpy\"\nfile_name = \"main.py\"\n"
                + "run_command = [\"python3\", \"{file}\"]\nrootfs = \"" + image + "\"\n"
                + "[[runtime]]\nlanguage = \"noimage\"\nfile_name = \"main.py\"\nrun_command = [\"python3\"]\n"
                + "rootfs = \"" + dir.resolve("missing") + "\"\n");
        RuntimeRegistry registry = RuntimeRegistry.load(file);
        assertThat(registry.find("noimage").orElseThrow().unavailableReason()).contains("has no usr directory");
        Executor executor = new Executor(TestHost.crucible().sandbox(), registry,
                TestHost.crucible().sandbox().host().workRoot().resolve("programs"));
        ExecuteResult r = executor.execute(ExecuteRequest.of("imgpy", "import os; print(os.path.exists('/usr/bin/python3'))"));
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        assertThat(r.stdout()).isEqualTo("True\n");
        TestHost.assertNothingLeft();
        Files.delete(image.resolve("usr")); // a link to /usr: remove it, never what it points to
    }
}
