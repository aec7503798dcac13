package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10, class 9: Ctrl-C pressed in a real terminal (tmux) while a cell of {@code crucible session} runs on the
 * local engine interrupts that cell; the interpreter and its variables stay. The terminal's SIGINT goes to its
 * foreground process group, so no sandbox may be in it.
 */
class SessionCtrlCIT {
    static final Path TMUX = Path.of("/usr/bin/tmux");

    final String socket = "crucible-test-" + ProcessHandle.current().pid();

    String tmux(String... args) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of(TMUX.toString(), "-L", socket));
        argv.addAll(List.of(args));
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return out;
    }

    String pane() throws IOException, InterruptedException {
        return tmux("capture-pane", "-p", "-t", "s", "-S", "-200");
    }

    void await(String what, BooleanSupplier done) throws Exception {
        try { // a JVM start and a sandbox: seconds, on a loaded machine more
            Awaitility.await(what).atMost(Duration.ofMinutes(2)).pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(100)).until(() -> {
                        if (done.getAsBoolean()) {
                            return true;
                        }
                        String shown = pane();
                        if (done.getAsBoolean()) { // what was awaited may have come between the two looks
                            return true;
                        }
                        if (shown.contains("crucible-exited") || shown.contains("InterpreterDied")) {
                            throw new AssertionError("crucible session or its interpreter ended while waiting for "
                                    + what + ":\n" + shown);
                        }
                        return false;
                    });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("waited 2 min for " + what + "; the terminal shows:\n" + pane(), e);
        }
    }

    BooleanSupplier paneShows(String text) {
        return () -> {
            try {
                return pane().contains(text);
            } catch (Exception e) {
                return false;
            }
        };
    }

    void type(String line) throws Exception {
        tmux("send-keys", "-t", "s", "-l", line);
        tmux("send-keys", "-t", "s", "Enter");
    }

    @Test
    void ctrlCInterruptsTheRunningCellAndKeepsTheInterpreter(@TempDir Path dir) throws Exception {
        Capability.TMUX.require(Files.isExecutable(TMUX) ? null : "no " + TMUX + " (apt-get install tmux)");
        // the local engine's data dir goes under java.io.tmpdir: the sandbox uids must be able to reach it
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // the shell around it survives the terminal's SIGINT (trap, which its children do not inherit)
        String command = "trap : INT; '" + java + "' --enable-native-access=ALL-UNNAMED -Djava.io.tmpdir='" + dir + "' -jar '"
                + CliIT.JAR.toAbsolutePath() + "' session --history '" + dir.resolve("history") + "'; echo crucible-exited-$?;"
                + " sleep 60";
        String started = tmux("new-session", "-d", "-s", "s", "-x", "150", "-y", "40", "/bin/sh", "-c", command);
        assertThat(started).as("tmux new-session").isEmpty();
        try {
            await("the prompt", paneShows(">>>"));
            type("x = 41");
            type("open('/workspace/started', 'w').close(); import time; time.sleep(300)");
            await("the cell to start", () -> {
                try (Stream<Path> files = Files.walk(dir)) {
                    return files.anyMatch(f -> f.getFileName().toString().equals("started"));
                } catch (IOException | UncheckedIOException e) {
                    return false;
                }
            });
            tmux("send-keys", "-t", "s", "C-c");
            await("the interrupted cell", paneShows("KeyboardInterrupt"));
            type("print(x + 1)");
            await("the variable kept", () -> {
                try {
                    return pane().lines().anyMatch(l -> l.strip().equals("42"));
                } catch (Exception e) {
                    return false;
                }
            });
            assertThat(pane()).doesNotContain("crucible-exited").doesNotContain("InterpreterDied");
            type(":quit");
            await("the session to end", paneShows("crucible-exited-0"));
        } finally {
            tmux("kill-server");
        }
    }
}
