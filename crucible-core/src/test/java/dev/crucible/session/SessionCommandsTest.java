package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.FakeClock;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.os.ProcStatus;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Commands beside a session's interpreter (issue 27 item 2), on the real sandbox: a command's exit code, streams,
 * stdin, environment and directory; its time limit; a program that is not there; several at once and during a
 * cell; the interpreter's state untouched; a sandbox that ends under a command.
 */
class SessionCommandsTest {
    private static final String ME = "owner-a";

    @TempDir
    static Path data;

    static SessionManager sessions;

    @BeforeAll
    static void start() throws Exception {
        Crucible c = TestHost.crucible();
        sessions = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data)
                .withMaxSessions(12, 8).withTimes(Duration.ofMinutes(10), Duration.ofHours(1), Duration.ofMillis(200)),
                FakeClock.atNow());
    }

    @AfterAll
    static void stop() {
        sessions.close();
    }

    private static SessionInfo session(String language) throws InterruptedException {
        return sessions.create(ME, new SessionManager.CreateRequest(language, null, null, null));
    }

    /** The parent of the process whose argv[0] is {@code marker}, once one runs. */
    private static Optional<Long> markedParent(String marker) {
        for (File f : new File("/proc").listFiles()) {
            if (!f.getName().matches("[0-9]+")) {
                continue;
            }
            try {
                String cmdline = new String(Files.readAllBytes(f.toPath().resolve("cmdline")));
                if (cmdline.startsWith(marker + "\0")) {
                    return ProcessHandle.of(Long.parseLong(f.getName())).flatMap(ProcessHandle::parent)
                            .map(ProcessHandle::pid);
                }
            } catch (IOException e) {
                // a process that ended meanwhile
            }
        }
        return Optional.empty();
    }

    /** {@code call} on another thread. */
    private static <T> CompletableFuture<T> async(Callable<T> call) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return call.call();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static CommandResult sh(SessionInfo s, String line) throws InterruptedException {
        return sessions.command(ME, s.id(), CommandRequest.shell(line));
    }

    private static CommandRequest argv(List<String> argv, Map<String, String> env, String cwd, Long timeoutMs,
            String stdin) {
        return new CommandRequest(null, argv, env, cwd, timeoutMs, stdin, null, null);
    }

    @Test
    void aCommandRunsInTheSessionsSandboxBesideItsInterpreter() throws Exception {
        SessionInfo s = session("python");
        try {
            CommandResult r = sh(s, "echo out; echo err >&2; id -u; pwd; exit 3");
            assertThat(r.exitCode()).isEqualTo(3);
            assertThat(r.signal()).isNull();
            assertThat(r.stdout()).isEqualTo("out\n1000\n/workspace\n");
            assertThat(r.stderr()).isEqualTo("err\n");
            assertThat(r.timedOut()).isFalse();
            assertThat(r.pid()).isGreaterThan(2); // bubblewrap's init is 1, the supervisor 2
            // the same sandbox: a file a command writes is the cell's, and the cell's variables are untouched
            assertThat(sessions.execute(ME, s.id(), "x = 41", null, null).status().wireName()).isEqualTo("ok");
            assertThat(sh(s, "echo hi > made-by-a-command.txt").exitCode()).isZero();
            CellResult cell = sessions.execute(ME, s.id(), "open('made-by-a-command.txt').read() + str(x + 1)", null,
                    null);
            assertThat(cell.result()).isEqualTo("'hi\\n42'");
            // the session's pid namespace: bubblewrap's init, then the supervisor, which started the interpreter
            assertThat(sh(s, "cat /proc/1/comm /proc/2/comm /proc/3/comm").stdout())
                    .isEqualTo("bwrap\n.crucible-super\npython3\n");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void argvEnvironmentDirectoryAndStdinAreTheCommands() throws Exception {
        SessionInfo s = session("python");
        try {
            CommandResult r = sessions.command(ME, s.id(), argv(List.of("sh", "-c", "echo \"$GREETING $HOME\"; pwd;"
                    + " cat; printf '%s' \"$1\"", "sh", "a 'quoted' arg"), Map.of("GREETING", "hello"), "/tmp", null,
                    "line one\nline two\n"));
            assertThat(r.exitCode()).isZero();
            assertThat(r.stdout()).isEqualTo("hello /workspace\n/tmp\nline one\nline two\na 'quoted' arg");
            // a program that is not there ends as a shell says so; a directory that is not there is refused
            CommandResult missing = sessions.command(ME, s.id(), argv(List.of("no-such-program"), null, null, null,
                    null));
            assertThat(missing.exitCode()).isEqualTo(127);
            assertThat(missing.stderr()).contains("no-such-program").contains("No such file or directory");
            assertThatThrownBy(() -> sessions.command(ME, s.id(), argv(List.of("true"), null, "/no/such/dir", null,
                    null))).isInstanceOfSatisfying(RequestException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_REQUEST);
                        assertThat(e.getMessage()).contains("/no/such/dir");
                    });
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aCommandPastItsTimeLimitIsKilledWithWhatItStarted() throws Exception {
        SessionInfo s = session("python");
        try {
            long start = System.nanoTime();
            CommandResult r = sessions.command(ME, s.id(), argv(List.of("sh", "-c", "echo before; sleep 60 & sleep 60;"
                    + " echo never"), null, null, 500L, null));
            assertThat(r.timedOut()).isTrue();
            assertThat(r.exitCode()).isNull();
            assertThat(r.signal()).isEqualTo(9);
            assertThat(r.stdout()).isEqualTo("before\n");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
            // the whole process group went: no sleep is left in the sandbox
            assertThat(sh(s, "for p in /proc/[0-9]*; do cat $p/comm; done | grep -c '^sleep$'").stdout().strip())
                    .isEqualTo("0");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void outputPastTheSessionsCapIsCutAndCounted() throws Exception {
        SessionInfo s = session("python");
        try {
            CommandResult r = sh(s, "head -c 10000000 /dev/zero | tr '\\0' x; echo done >&2");
            assertThat(r.exitCode()).isZero();
            assertThat(r.stdoutTruncated()).isTrue();
            assertThat(r.stdout().length()).isEqualTo(s.limits().outputBytes());
            assertThat(r.stderr()).isEqualTo("done\n");
            assertThat(r.stderrTruncated()).isFalse();
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void commandsRunAtOnceAndWhileACellRuns() throws Exception {
        SessionInfo s = session("python");
        try {
            CompletableFuture<CellResult> cell = async(() -> sessions.execute(ME, s.id(),
                    "import time\ntime.sleep(1.5)\n'slept'", null, null));
            List<CompletableFuture<CommandResult>> all = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                int n = i;
                all.add(async(() -> sh(s, "sleep 0.3; echo " + n)));
            }
            for (int i = 0; i < all.size(); i++) {
                assertThat(all.get(i).get().stdout()).isEqualTo(i + "\n");
            }
            assertThat(cell.get().result()).isEqualTo("'slept'");
            // an interrupt is the cell's: a command running meanwhile goes on
            CompletableFuture<CommandResult> command = async(() -> sh(s, "sleep 1; echo went on"));
            CompletableFuture<CellResult> interrupted = async(() -> sessions.execute(ME, s.id(),
                    "import time\ntime.sleep(30)", null, null));
            Awaitility.await().atMost(Duration.ofSeconds(20))
                    .until(() -> sessions.interrupt(ME, s.id()));
            assertThat(interrupted.get().status().wireName()).isEqualTo("interrupted");
            assertThat(command.get().stdout()).isEqualTo("went on\n");
            assertThat(command.get().signal()).isNull();
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aSessionWithoutASandboxStartsOneForItsFirstCommand() throws Exception {
        SessionInfo s = session("javascript");
        try {
            assertThat(sh(s, "echo $((6 * 7))").stdout()).isEqualTo("42\n");
            assertThat(sessions.execute(ME, s.id(), "6 * 7", null, null).result()).isEqualTo("42");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aCommandThatKillsItsSandboxEndsWithAClearErrorAndTheSessionGoesOn() throws Exception {
        SessionInfo s = session("python");
        try {
            assertThat(sessions.execute(ME, s.id(), "y = 1", null, null).status().wireName()).isEqualTo("ok");
            // the supervisor is the session's root's: its user cannot signal it; its root may kill it (its own
            // sandbox), never anything outside
            assertThat(sh(s, "kill -9 2 2>/dev/null || echo refused").stdout()).isEqualTo("refused\n");
            assertThatThrownBy(() -> sessions.command(ME, s.id(), new CommandRequest("kill -9 2; sleep 5", null, null,
                    null, null, null, CommandRequest.User.ROOT, null))).isInstanceOfSatisfying(RequestException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERPRETER_UNAVAILABLE));
            CellResult after = sessions.execute(ME, s.id(), "1 + 1", null, null);
            assertThat(after.result()).isEqualTo("2");
            assertThat(after.restarted()).isTrue();
            assertThat(sh(s, "echo again").stdout()).isEqualTo("again\n");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    /**
     * A stopped supervisor answers nothing: a command, even one whose stdin fills the socket's buffer, fails within the
     * supervisor's bound instead of holding its thread, and the session restarts. Stopped from the host here (the
     * session's root could stop it too), found as the sandbox's pid 2 in the session's own cgroup.
     */
    @Test
    void aStoppedSupervisorFailsCommandsWithinTheirBound() throws Exception {
        SessionInfo s = session("python");
        try {
            assertThat(sessions.execute(ME, s.id(), "1", null, null).status().wireName()).isEqualTo("ok");
            String marker = "crucible-stop-me-" + s.id();
            sessions.processes(ME, s.id()).start(new CommandRequest(null, List.of("bash", "-c", "exec -a " + marker
                    + " sleep 600"), null, null, null, null, null, true));
            long supervisor = Awaitility.await().atMost(Duration.ofSeconds(30))
                    .until(() -> markedParent(marker), Optional::isPresent).orElseThrow();
            assertThat(ProcStatus.of(supervisor).orElseThrow().innermostPid()).isEqualTo(2);
            assertThat(new ProcessBuilder("kill", "-STOP", Long.toString(supervisor)).start().waitFor()).isZero();
            long start = System.nanoTime();
            assertThatThrownBy(() -> sessions.command(ME, s.id(), argv(List.of("wc", "-c"), null, null, null,
                    "x".repeat(1_900_000)))).isInstanceOfSatisfying(RequestException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERPRETER_UNAVAILABLE));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
            CellResult after = sessions.execute(ME, s.id(), "1 + 1", null, null);
            assertThat(after.result()).isEqualTo("2");
            assertThat(after.restarted()).isTrue();
            assertThat(sh(s, "echo served").stdout()).isEqualTo("served\n");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    /** A session at its pids limit gets a 429 that says so for a command, and the supervisor goes on answering. */
    @Test
    void aSessionAtItsPidsLimitRefusesACommandAndRecovers() throws Exception {
        SessionInfo s = session("python");
        try {
            CellResult filled = sessions.execute(ME, s.id(), """
                    import subprocess
                    held = []
                    try:
                        for _ in range(1000):
                            held.append(subprocess.Popen(['sleep', '60']))
                    except OSError:
                        pass
                    len(held) > 50""", null, 60_000L);
            assertThat(filled.result()).as(filled.toString()).isEqualTo("True");
            assertThatThrownBy(() -> sh(s, "true")).isInstanceOfSatisfying(RequestException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_PROCESSES);
                assertThat(e.getMessage()).contains("pids limit");
            });
            assertThat(sessions.execute(ME, s.id(), "for p in held:\n    p.kill()\n    p.wait()", null, 60_000L)
                    .status().wireName()).isEqualTo("ok");
            assertThat(sh(s, "echo room again").stdout()).isEqualTo("room again\n");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    /** The supervisor's control socket is the host's alone: no command or cell reaches it or the supervisor. */
    @Test
    void nothingInTheSessionReachesTheSupervisorsSocket() throws Exception {
        SessionInfo s = session("python");
        try {
            String probe = """
                    import os, socket
                    for pid in ('1', '2'):
                        for fd in ('3', '4', '5'):
                            path = '/proc/%s/fd/%s' % (pid, fd)
                            try:
                                os.close(os.open(path, os.O_RDWR))
                                print('opened', path)
                            except OSError:
                                pass
                    for path in ('/proc/2/environ', '/proc/2/mem', '/proc/2/maps'):
                        try:
                            open(path, 'rb').read(1)
                            print('read', path)
                        except OSError:
                            pass
                    for fd in range(3, 64):
                        try:
                            if socket.socket(fileno=fd).family == socket.AF_UNIX:
                                print('a unix socket at', fd)
                        except OSError:
                            pass
                    print('done')
                    """;
            CommandResult command = sessions.command(ME, s.id(), argv(List.of("python3", "-c", probe), null, null,
                    null, null));
            assertThat(command.stdout()).as(command.stderr()).isEqualTo("done\n");
            CellResult cell = sessions.execute(ME, s.id(), probe, null, null);
            assertThat(cell.stdout()).as(cell.stderr()).isEqualTo("done\n");
            assertThat(sh(s, "echo still served").stdout()).isEqualTo("still served\n");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aRequestThatCannotRunIsRefusedWhole() throws Exception {
        SessionInfo s = session("python");
        try {
            for (CommandRequest bad : List.of(
                    new CommandRequest("echo", List.of("echo"), null, null, null, null, null, null),
                    new CommandRequest(null, null, null, null, null, null, null, null),
                    new CommandRequest(null, List.of(), null, null, null, null, null, null),
                    new CommandRequest(null, List.of("echo", "a\0b"), null, null, null, null, null, null),
                    new CommandRequest("true", null, Map.of("A=B", "c"), null, null, null, null, null),
                    new CommandRequest("true", null, null, "relative", null, null, null, null))) {
                assertThatThrownBy(() -> sessions.command(ME, s.id(), bad)).as(bad.toString())
                        .isInstanceOfSatisfying(RequestException.class,
                                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_REQUEST));
            }
            assertThatThrownBy(() -> sessions.command(ME, s.id(), new CommandRequest("true", null, null, null, 0L,
                    null, null, null))).isInstanceOfSatisfying(RequestException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_LIMITS));
            assertThatThrownBy(() -> sessions.command("someone-else", s.id(), CommandRequest.shell("true")))
                    .isInstanceOfSatisfying(RequestException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.SESSION_NOT_FOUND));
        } finally {
            sessions.delete(ME, s.id());
        }
    }
}
