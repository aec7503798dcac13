package dev.crucible.server.agentsandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link ShellWords} against Python's own {@code shlex.split} (Debian's python3), and the contract's settings. */
class ShellWordsTest {
    @ParameterizedTest
    @ValueSource(strings = {"echo hello", "echo 'hello world'", "  spaced   out  ", "a\"b c\"d", "printf '%s' \"a\\\"b\"",
        "back\\ slash", "\"x\\y\" 'x\\y' x\\y", "''", "\"\"", "a '' b", "tab\tand\nnewline", "$HOME `id` #hash",
        "\"\\\\\" '\\\\'", "python -c 'print(\"hi\")'", "é 'ü' \"日本\""})
    void splitsAsPythonsShlex(String line) throws Exception {
        Process p = new ProcessBuilder("python3", "-c",
                "import json, shlex, sys; print(json.dumps(shlex.split(sys.argv[1])))", line).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
        List<String> python = List.of(Exchanges.JSON.readValue(out, String[].class));
        assertThat(ShellWords.split(line)).isEqualTo(python);
    }

    @Test
    void unclosedQuotesAndATrailingBackslashAreRefusedAsShlexRefusesThem() {
        assertThatThrownBy(() -> ShellWords.split("echo 'open")).hasMessage("No closing quotation");
        assertThatThrownBy(() -> ShellWords.split("echo \"open")).hasMessage("No closing quotation");
        assertThatThrownBy(() -> ShellWords.split("echo \\")).hasMessage("No escaped character");
    }

    @Test
    void theExecTimeoutIsReadAsTheExampleReadsItAndCappedAtACommandsLongest() {
        assertThat(AgentSandbox.Settings.execTimeout(null)).isEqualTo(Duration.ofSeconds(300));
        assertThat(AgentSandbox.Settings.execTimeout("5")).isEqualTo(Duration.ofSeconds(5));
        assertThat(AgentSandbox.Settings.execTimeout("0.5")).isEqualTo(Duration.ofMillis(500));
        assertThat(AgentSandbox.Settings.execTimeout("not-a-number")).isEqualTo(Duration.ofSeconds(300));
        assertThat(AgentSandbox.Settings.execTimeout("-1")).isEqualTo(Duration.ofSeconds(300));
        assertThat(AgentSandbox.Settings.execTimeout("inf")).isEqualTo(Duration.ofSeconds(300));
        assertThat(AgentSandbox.Settings.execTimeout("900")).isEqualTo(Duration.ofSeconds(600));
        AgentSandbox.Settings blank = AgentSandbox.Settings.of("127.0.0.1", AgentSandboxPorts.DEFAULTS,
                Map.of("SANDBOX_BASE_DIR", "   "), 60);
        assertThat(blank.baseDir()).isEqualTo("/workspace");
        assertThatThrownBy(() -> AgentSandbox.Settings.of("127.0.0.1", AgentSandboxPorts.DEFAULTS,
                Map.of("SANDBOX_BASE_DIR", "app"), 60)).hasMessageContaining("absolute path inside the sandbox");
    }

    @Test
    void pathsClimbingOutOfTheBaseAreOutside() throws Exception {
        assertThat(BasePath.resolve("/workspace", "///foo.txt")).isEqualTo("/workspace/foo.txt");
        assertThat(BasePath.resolve("/workspace", "a/./b/../c")).isEqualTo("/workspace/a/c");
        assertThat(BasePath.resolve("/workspace", "")).isEqualTo("/workspace");
        for (String out : List.of("../../etc/passwd", "foo/../../bar", "/../etc/passwd", "..")) {
            assertThatThrownBy(() -> BasePath.resolve("/workspace", out)).isInstanceOf(BasePath.Outside.class);
        }
        assertThat(BasePath.resolve("/", "workspace/x")).isEqualTo("/workspace/x");
        assertThatThrownBy(() -> BasePath.resolve("/", "../x")).isInstanceOf(BasePath.Outside.class);
    }
}
