package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.FakeClock;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.process.Terminal;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Background processes of a session (issue 27 item 2), on the real sandbox: output kept for a late reader, stdin
 * written and closed, signals to a process group, a time limit, a flood that only the ring's tail survives, the table's
 * cap, idleness, and processes that end with their sandbox (a double-forked escapee included).
 */
class SessionProcessesTest {
    private static final String ME = "owner-a";
    private static final FakeClock CLOCK = FakeClock.atNow();

    @TempDir
    static Path data;

    static SessionManager sessions;

    @BeforeAll
    static void start() throws Exception {
        Crucible c = TestHost.crucible();
        sessions = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data)
                .withMaxSessions(12, 8).withTimes(Duration.ofMinutes(10), Duration.ofHours(1), Duration.ofHours(1)),
                CLOCK);
    }

    @AfterAll
    static void stop() {
        sessions.close();
    }

    private static SessionInfo session() throws InterruptedException {
        return sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null));
    }

    private static CommandRequest background(String line, boolean stdinOpen, Long timeoutMs) {
        return new CommandRequest(line, null, null, null, timeoutMs, null, null, true, stdinOpen, null);
    }

    private static BackgroundProcess start(SessionInfo s, String line) throws InterruptedException {
        SessionProcesses processes = sessions.processes(ME, s.id());
        return processes.get(processes.start(background(line, false, null)).pid());
    }

    /** Reads a process's whole output to its end (its stdout and stderr apart), waiting for each chunk. */
    private static String[] drain(BackgroundProcess p) throws InterruptedException {
        ByteArrayOutputStream[] streams = {new ByteArrayOutputStream(), new ByteArrayOutputStream()};
        long next = 0;
        for (int turns = 0; turns < 600; turns++) {
            BackgroundProcess.Output out = p.read(next, 1 << 20, 100);
            for (BackgroundProcess.Chunk c : out.chunks()) {
                streams[c.stderr() ? 1 : 0].writeBytes(c.bytes());
            }
            next = out.next();
            if (out.ended()) {
                return new String[] {streams[0].toString(StandardCharsets.UTF_8),
                        streams[1].toString(StandardCharsets.UTF_8)};
            }
        }
        throw new AssertionError("process " + p.pid() + " did not end in 60 s: " + p.info());
    }

    @Test
    void aBackgroundProcessRunsOnItsOutputKeptForALateReaderAndItsStdinOpen() throws Exception {
        SessionInfo s = session();
        try {
            SessionProcesses processes = sessions.processes(ME, s.id());
            ProcessInfo started = processes.start(background("echo one; echo two >&2; read line; echo \"got $line\";"
                    + " cat; exit 4", true, null));
            assertThat(started.running()).isTrue();
            assertThat(started.stdinOpen()).isTrue();
            assertThat(started.argv()).containsExactly("/bin/sh", "-c", started.argv().get(2));
            BackgroundProcess p = processes.get(started.pid());
            // a late reader: the first lines are kept while the process waits for its stdin
            BackgroundProcess.Output first = p.read(0, 1 << 20, 5_000);
            while (first.next() < "one\ntwo\n".length()) {
                first = p.read(0, 1 << 20, 5_000);
            }
            assertThat(first.ended()).isFalse();
            assertThat(first.chunks()).extracting(BackgroundProcess.Chunk::stderr).containsExactly(false, true);
            assertThat(processes.write(p.pid(), "hello\n", false)).isEqualTo(6);
            assertThat(processes.write(p.pid(), "rest", true)).isEqualTo(4);
            String[] out = drain(p);
            assertThat(out[0]).isEqualTo("one\ngot hello\nrest");
            assertThat(out[1]).isEqualTo("two\n");
            ProcessInfo ended = p.info();
            assertThat(ended.running()).isFalse();
            assertThat(ended.exitCode()).isEqualTo(4);
            assertThat(ended.stdinOpen()).isFalse();
            assertThat(ended.outputBytes()).isEqualTo(out[0].length() + out[1].length());
            assertThat(processes.list()).extracting(ProcessInfo::pid).contains(p.pid());
            assertThat(sessions.get(ME, s.id()).processes()).extracting(ProcessInfo::pid).contains(p.pid());
            // the ended process takes nothing more
            assertThatThrownBy(() -> processes.write(p.pid(), "late", false))
                    .isInstanceOfSatisfying(RequestException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STDIN_CLOSED));
            assertThat(processes.signal(p.pid(), "TERM", true)).isFalse();
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aProcessStartedWithoutStdinOpenReadsEndOfFile() throws Exception {
        SessionInfo s = session();
        try {
            BackgroundProcess p = start(s, "cat; echo done");
            assertThat(drain(p)[0]).isEqualTo("done\n");
            assertThatThrownBy(() -> sessions.processes(ME, s.id()).write(p.pid(), "x", false))
                    .isInstanceOfSatisfying(RequestException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STDIN_CLOSED));
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aSignalReachesTheProcessAndWhatItStarted() throws Exception {
        SessionInfo s = session();
        try {
            BackgroundProcess p = start(s, "sleep 4711 & echo started; wait");
            while (p.read(0, 100, 5_000).next() == 0) {
                Thread.onSpinWait();
            }
            assertThat(sessions.processes(ME, s.id()).signal(p.pid(), "SIGTERM", true)).isTrue();
            drain(p);
            assertThat(p.info().signal()).isEqualTo(15);
            assertThat(p.info().exitCode()).isNull();
            assertThat(sessions.command(ME, s.id(), CommandRequest.shell("cat /proc/[0-9]*/cmdline | tr '\\0' ' '"))
                    .stdout()).doesNotContain("sleep 4711");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aBackgroundProcessPastItsTimeLimitIsKilled() throws Exception {
        SessionInfo s = session();
        try {
            SessionProcesses processes = sessions.processes(ME, s.id());
            BackgroundProcess p = processes.get(processes.start(background("sleep 60", false, 300L)).pid());
            drain(p);
            assertThat(p.info().timedOut()).isTrue();
            assertThat(p.info().signal()).isEqualTo(9);
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aFloodIntoADetachedProcessKeepsOnlyTheTailAndTheSupervisorAnswers() throws Exception {
        SessionInfo s = session();
        try {
            BackgroundProcess p = start(s, "head -c 3000000 /dev/zero | tr '\\0' a; echo END");
            // nobody reads while it writes: its pipes are drained anyway, the ring keeps the tail
            while (p.running()) {
                p.read(Long.MAX_VALUE, 1, 100);
            }
            ProcessInfo info = p.info();
            assertThat(info.exitCode()).isZero();
            assertThat(info.outputBytes()).isEqualTo(3_000_004);
            assertThat(info.droppedBytes()).isEqualTo(3_000_004 - Supervisor.RING_BYTES);
            BackgroundProcess.Output late = p.read(0, Integer.MAX_VALUE, 0);
            assertThat(late.missed()).isEqualTo(info.droppedBytes());
            ByteArrayOutputStream kept = new ByteArrayOutputStream();
            late.chunks().forEach(c -> kept.writeBytes(c.bytes()));
            assertThat(kept.size()).isEqualTo(Supervisor.RING_BYTES);
            assertThat(kept.toString(StandardCharsets.US_ASCII)).endsWith("aaaEND\n");
            assertThat(late.ended()).isTrue();
            assertThat(sessions.command(ME, s.id(), CommandRequest.shell("echo still")).stdout()).isEqualTo("still\n");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void theTableKeepsAtMostItsCapOfRunningProcessesAndLetsEndedOnesGo() throws Exception {
        SessionInfo s = session();
        try {
            SessionProcesses processes = sessions.processes(ME, s.id());
            List<Long> pids = new ArrayList<>();
            for (int i = 0; i < Supervisor.MAX_BACKGROUND; i++) {
                pids.add(processes.start(background("exec sleep 600", false, null)).pid());
            }
            assertThatThrownBy(() -> processes.start(background("true", false, null)))
                    .isInstanceOfSatisfying(RequestException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_PROCESSES));
            assertThat(sessions.command(ME, s.id(), CommandRequest.shell("echo answered")).stdout())
                    .isEqualTo("answered\n");
            BackgroundProcess first = processes.get(pids.getFirst());
            assertThat(processes.signal(first.pid(), 9, false)).isTrue();
            drain(first);
            long next = processes.start(background("echo room", false, null)).pid();
            assertThat(drain(processes.get(next))[0]).isEqualTo("room\n");
            assertThat(processes.list()).hasSize(Supervisor.MAX_BACKGROUND);
            assertThatThrownBy(() -> processes.get(first.pid())).isInstanceOfSatisfying(RequestException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.PROCESS_NOT_FOUND));
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aRunningBackgroundProcessIsUseAndTheIdleTimeoutCountsFromItsEnd() throws Exception {
        SessionInfo s = session();
        BackgroundProcess p = start(s, "exec sleep 600");
        CLOCK.advance(Duration.ofMinutes(30)); // three idle timeouts: the reaper must leave it
        sessions.reap();
        assertThat(sessions.get(ME, s.id()).processes()).extracting(ProcessInfo::running).containsExactly(true);
        sessions.processes(ME, s.id()).signal(p.pid(), "KILL", false);
        drain(p);
        assertThat(sessions.get(ME, s.id()).id()).isEqualTo(s.id());
        sessions.reap();
        assertThat(sessions.get(ME, s.id()).id()).as("idle from the process's end, not before").isEqualTo(s.id());
        CLOCK.advance(Duration.ofMinutes(11));
        sessions.reap();
        assertThatThrownBy(() -> sessions.get(ME, s.id())).isInstanceOfSatisfying(RequestException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.SESSION_NOT_FOUND));
        assertThat(p.info().lost()).isFalse();
    }

    @Test
    void processesEndWithTheirSandboxEvenADoubleForkedEscapee() throws Exception {
        SessionInfo s = session();
        BackgroundProcess p = start(s, "(setsid sleep 4242 &); exec sleep 4343");
        await("both sleeps running on the host").atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(20))
                .until(() -> hostRuns("sleep 4242") && hostRuns("sleep 4343"));
        sessions.restart(ME, s.id());
        drain(p);
        assertThat(p.info().lost()).isTrue();
        assertThat(p.info().running()).isFalse();
        assertThat(sessions.processes(ME, s.id()).list()).isEmpty();
        // a bound, not a timing: the kill reaches the escapee as soon as the host gets to it
        await("the sandbox's processes gone").atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(50))
                .until(() -> !hostRuns("sleep 4242") && !hostRuns("sleep 4343"));
        assertThat(hostRuns("sleep 4242")).as("the double-forked escapee").isFalse();
        assertThat(hostRuns("sleep 4343")).isFalse();
        sessions.delete(ME, s.id());
    }

    @Test
    void aProcessOnATerminalGetsItsSizeItsResizeAndCtrlCButNoTiocsti() throws Exception {
        SessionInfo s = session();
        try {
            SessionProcesses processes = sessions.processes(ME, s.id());
            String program = """
                    import fcntl, os, signal, sys, termios
                    # os.write, not print: the signal may come while print's buffer is mid-flush (a reentrant call)
                    signal.signal(signal.SIGWINCH, lambda *a: os.write(1, b"winch %d %d\\n" % tuple(os.get_terminal_size())))
                    try:
                        fcntl.ioctl(0, termios.TIOCSTI, b"x")
                        print("tiocsti worked", flush=True)
                    except OSError as e:
                        print("tiocsti refused", e.errno, flush=True)
                    print("ready", os.isatty(0), *os.get_terminal_size(), flush=True)
                    sys.stdin.readline()
                    """;
            ProcessInfo started = processes.start(new CommandRequest(null, List.of("python3", "-c", program), null,
                    null, null, null, null, true, true, new Terminal(24, 80)));
            assertThat(started.pty()).isEqualTo(new Terminal(24, 80));
            BackgroundProcess p = processes.get(started.pid());
            StringBuilder seen = new StringBuilder();
            long next = 0;
            next = readUntil(p, next, seen, "ready");
            assertThat(seen.toString()).contains("tiocsti refused 1", "ready True 80 24").doesNotContain("worked");
            assertThat(processes.resize(p.pid(), new Terminal(40, 120))).isTrue();
            next = readUntil(p, next, seen, "winch");
            assertThat(seen.toString()).contains("winch 120 40");
            assertThat(p.info().pty()).isEqualTo(new Terminal(40, 120));
            processes.write(p.pid(), "\u0003", false); // Ctrl-C: the line discipline makes it SIGINT
            drain(p);
            assertThat(p.info().signal()).as(p.info().toString()).isEqualTo(2);
            assertThatThrownBy(() -> processes.resize(start(s, "exec sleep 600").pid(), new Terminal(10, 10)))
                    .isInstanceOfSatisfying(RequestException.class, e -> assertThat(e.getMessage()).contains("pipes"));
            assertThatThrownBy(() -> processes.resize(p.pid(), new Terminal(0, 10)))
                    .isInstanceOf(RequestException.class);
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    /** Reads a process's output into {@code seen} until it holds {@code text}; the offset to read from next. */
    private static long readUntil(BackgroundProcess p, long from, StringBuilder seen, String text)
            throws InterruptedException {
        long next = from;
        for (int turns = 0; turns < 300 && !seen.toString().contains(text); turns++) {
            BackgroundProcess.Output out = p.read(next, 1 << 20, 100);
            out.chunks().forEach(c -> seen.append(new String(c.bytes(), StandardCharsets.UTF_8)));
            next = out.next();
            if (out.ended() && !seen.toString().contains(text)) {
                throw new AssertionError("ended before " + text + ": " + seen);
            }
        }
        assertThat(seen.toString()).contains(text);
        return next;
    }

    @Test
    void aRequestThatCannotStartIsRefusedWhole() throws Exception {
        SessionInfo s = session();
        try {
            SessionProcesses processes = sessions.processes(ME, s.id());
            for (CommandRequest bad : List.of(
                    new CommandRequest(null, List.of("/no/such/program"), null, null, null, null, null, true, null,
                            null),
                    new CommandRequest("true", null, null, null, null, null, null, false, null, new Terminal(24, 80)),
                    new CommandRequest("true", null, null, "/nowhere", null, null, null, true, null, null),
                    new CommandRequest("true", null, null, null, null, null, null, false, true, null),
                    new CommandRequest("true", null, null, null, 0L, null, null, true, null, null))) {
                assertThatThrownBy(() -> processes.start(bad)).as(bad.toString()).isInstanceOf(RequestException.class);
            }
            assertThatThrownBy(() -> processes.get(99_999)).isInstanceOfSatisfying(RequestException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.PROCESS_NOT_FOUND));
            BackgroundProcess p = start(s, "exec sleep 600");
            assertThatThrownBy(() -> processes.signal(p.pid(), "NOPE", true)).isInstanceOfSatisfying(
                    RequestException.class, e -> assertThat(e.getMessage()).contains("TERM"));
            assertThatThrownBy(() -> sessions.processes("someone-else", s.id())).isInstanceOfSatisfying(
                    RequestException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.SESSION_NOT_FOUND));
            assertThat(processes.list()).extracting(ProcessInfo::pid).containsExactly(p.pid());
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    /** Whether a process whose command line is {@code cmdline} (spaces for NULs) runs anywhere on this host. */
    private static boolean hostRuns(String cmdline) throws IOException {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            return procs.filter(d -> d.getFileName().toString().chars().allMatch(Character::isDigit)).anyMatch(d -> {
                try {
                    return new String(Files.readAllBytes(d.resolve("cmdline")), StandardCharsets.UTF_8)
                            .replace('\0', ' ').strip().equals(cmdline);
                } catch (IOException e) {
                    return false; // ended meanwhile
                }
            });
        }
    }
}
