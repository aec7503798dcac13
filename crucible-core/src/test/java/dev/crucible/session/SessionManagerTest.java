package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.FakeClock;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.CellStatus;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.workspace.Workspace;
import dev.crucible.testhost.Capability;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sessions on the real sandbox: state, modes, interrupts, crashes, ownership, expiry, resume after a restart. */
class SessionManagerTest {
    static final String ME = "owner-a";
    static final String OTHER = "owner-b";

    @TempDir
    static Path data;

    static SessionManager sessions;
    /** The sessions' time: idle timeouts and lifetimes pass when a test advances it, never by waiting. */
    static final FakeClock CLOCK = FakeClock.atNow();

    @BeforeAll
    static void start() throws Exception {
        Crucible c = TestHost.crucible();
        sessions = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data)
                .withMaxSessions(12, 8).withTimes(Duration.ofMinutes(10), Duration.ofHours(1), Duration.ofMillis(200)),
                CLOCK);
    }

    @AfterAll
    static void stop() {
        sessions.close();
    }

    static SessionInfo python() throws InterruptedException {
        return sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null));
    }

    static CellResult run(SessionInfo s, String code) throws InterruptedException {
        return sessions.execute(ME, s.id(), code, null, null);
    }

    @Test
    void stateAndModesInPython() throws Exception {
        SessionInfo s = python();
        try {
            assertThat(s.id()).matches("[0-9a-f]{32}");
            CellResult first = run(s, "import math\nx = 41\nprint('hello')\nx + 1");
            assertThat(first.status().wireName()).isEqualTo("ok");
            assertThat(first.stdout()).isEqualTo("hello\n");
            assertThat(first.result()).isEqualTo("42");
            assertThat(sessions.execute(ME, s.id(), "x * 2", "exec", null).result()).isNull();
            assertThat(sessions.execute(ME, s.id(), "math.floor(x / 2)", "single", null).result()).isEqualTo("20");
            assertThat(sessions.execute(ME, s.id(), "for i in range(2):", "single", null).status().wireName()).isEqualTo("incomplete");
            assertThat(sessions.execute(ME, s.id(), "def f(a):", "auto", null).status().wireName()).isEqualTo("incomplete");
            assertThat(sessions.execute(ME, s.id(), "x", " Single ", null).result()).as("a wire name in any case").isEqualTo("41");
            assertThatThrownBy(() -> sessions.execute(ME, s.id(), "x", "eval", null)).isInstanceOf(RequestException.class)
                    .hasMessage("mode must be one of [auto, exec, single]");
            CellResult error = run(s, "def g():\n    raise ValueError('\\x1b[31mbad\\x1b[0m')\ng()");
            assertThat(error.status().wireName()).isEqualTo("runtime_error");
            assertThat(error.error().name()).isEqualTo("ValueError");
            assertThat(error.error().message()).isEqualTo("bad");
            assertThat(error.error().traceback()).contains("line 2, in g").doesNotContain("\u001b").doesNotContain("agent");
            assertThat(run(s, "1 +").status().wireName()).isEqualTo("compile_error");
            CellResult child = run(s, "import subprocess\nsubprocess.run(['sh', '-c', 'echo out; echo err >&2'])\nNone");
            assertThat(child.stdout()).isEqualTo("out\n");
            assertThat(child.stderr()).isEqualTo("err\n");
            CellResult shown = run(s, "class H:\n    def _repr_html_(self):\n        return '<b>x</b>'\nH()");
            assertThat(shown.display()).containsExactly(new CellResult.Display("text/html", "<b>x</b>"));
            assertThat(run(s, "import asyncio\nawait asyncio.sleep(0)\nx").result()).isEqualTo("41");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aMatplotlibFigureComesBackAsPng() throws Exception {
        Capability.MATPLOTLIB.require();
        SessionInfo s = python();
        try {
            CellResult r = run(s, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nNone");
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
            assertThat(r.display()).hasSize(1);
            assertThat(r.display().getFirst().mime()).isEqualTo("image/png");
            byte[] png = Base64.getDecoder().decode(r.display().getFirst().data());
            assertThat(Arrays.copyOf(png, 8)).containsExactly(0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a);
            assertThat(r.stderr()).as("fontconfig finds its configuration and its cache: nothing to say").isEmpty();
            assertThat(run(s, "1").display()).isNull(); // the figure was shown once and closed
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void stateInJavaScriptWithTopLevelAwait() throws Exception {
        SessionInfo s = sessions.create(ME, new SessionManager.CreateRequest("javascript", null, null, null));
        try {
            assertThat(run(s, "let x = 41; console.log('hi'); x + 1").result()).isEqualTo("42");
            CellResult awaited = run(s, "const y = await Promise.resolve(x * 2); y");
            assertThat(awaited.status().wireName()).isEqualTo("ok");
            assertThat(awaited.result()).isEqualTo("82");
            assertThat(run(s, "x + y").result()).isEqualTo("123");
            assertThat(run(s, "function f() {").status().wireName()).isEqualTo("incomplete");
            CellResult error = run(s, "null.z");
            assertThat(error.status().wireName()).isEqualTo("runtime_error");
            assertThat(error.error().name()).isEqualTo("TypeError");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void timeoutInterruptsTheCellAndKeepsTheVariables() throws Exception {
        SessionInfo s = python();
        try {
            run(s, "kept = 'yes'");
            CellResult slow = sessions.execute(ME, s.id(), "import time\nwhile True:\n    time.sleep(0.01)", null, 300L);
            assertThat(slow.status().wireName()).isEqualTo("timeout");
            assertThat(slow.error().name()).isEqualTo("KeyboardInterrupt");
            assertThat(slow.restarted()).isFalse();
            CellResult after = run(s, "kept");
            assertThat(after.result()).isEqualTo("'yes'");
            assertThat(after.restarted()).isFalse();
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aCellThatIgnoresTheInterruptGetsTheSessionRestarted() throws Exception {
        SessionInfo s = python();
        try {
            run(s, "lost = 1");
            CellResult stubborn = sessions.execute(ME, s.id(),
                    "import time\nwhile True:\n    try:\n        time.sleep(0.01)\n    except KeyboardInterrupt:\n        pass",
                    null, 300L);
            assertThat(stubborn.status().wireName()).isEqualTo("timeout");
            assertThat(stubborn.restarted()).isTrue();
            assertThat(stubborn.error().message()).contains("restarted");
            CellResult after = run(s, "'lost' in globals()");
            assertThat(after.result()).isEqualTo("False");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void anInterruptRequestStopsTheRunningCell() throws Exception {
        SessionInfo s = python();
        try {
            run(s, "n = 0");
            CompletableFuture<CellResult> cell = CompletableFuture.supplyAsync(() -> {
                try {
                    return run(s, "import time\nwhile True:\n    n += 1\n    time.sleep(0.001)");
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            boolean interrupted = await("a running cell to interrupt").atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(20)).until(() -> sessions.interrupt(ME, s.id()), done -> done);
            assertThat(interrupted).isTrue();
            CellResult r = cell.get();
            assertThat(r.status().wireName()).isEqualTo("interrupted");
            assertThat(r.error().name()).isEqualTo("KeyboardInterrupt");
            assertThat(Integer.parseInt(run(s, "n").result())).isPositive();
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void aCellThatKillsItsInterpreterIsReportedAndTheSessionComesBack() throws Exception {
        SessionInfo s = python();
        try {
            run(s, "open('/workspace/kept.txt', 'w').write('file survives')");
            CellResult exit = run(s, "import os\nos._exit(3)");
            assertThat(exit.status().wireName()).isEqualTo("runtime_error");
            assertThat(exit.error().name()).isEqualTo("InterpreterDied");
            CellResult next = run(s, "open('/workspace/kept.txt').read()");
            assertThat(next.restarted()).isTrue();
            assertThat(next.result()).isEqualTo("'file survives'");

            CellResult segv = run(s, "import ctypes\nctypes.string_at(0)");
            assertThat(segv.status().wireName()).isEqualTo("runtime_error");
            assertThat(segv.error().name()).isEqualTo("InterpreterDied");
            assertThat(run(s, "1").restarted()).isTrue();
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void memoryLimitKillsAndIsReported() throws Exception {
        SessionInfo s = sessions.create(ME, new SessionManager.CreateRequest("python",
                SessionLimits.DEFAULT.with(64, null, null, null, null), null, null));
        try {
            CellResult oom = run(s, "hog = []\nwhile True:\n    hog.append(bytearray(8 << 20))");
            assertThat(oom.status().wireName()).isEqualTo("memory_limit");
            assertThat(run(s, "2 + 2").result()).isEqualTo("4");
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void sessionsBelongToTheirOwner() throws Exception {
        SessionInfo s = python();
        try {
            assertThatThrownBy(() -> sessions.execute(OTHER, s.id(), "1", null, null))
                    .isInstanceOf(RequestException.class).extracting("code").isEqualTo(ErrorCode.SESSION_NOT_FOUND);
            assertThatThrownBy(() -> sessions.files(OTHER, s.id())).extracting("code").isEqualTo(ErrorCode.SESSION_NOT_FOUND);
            assertThatThrownBy(() -> sessions.delete(OTHER, s.id())).extracting("code").isEqualTo(ErrorCode.SESSION_NOT_FOUND);
            assertThat(sessions.list(OTHER)).isEmpty();
            assertThat(sessions.list(ME)).extracting(SessionInfo::id).contains(s.id());
            assertThatThrownBy(() -> sessions.get(ME, "0".repeat(32))).extracting("code").isEqualTo(ErrorCode.SESSION_NOT_FOUND);
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void badRequestsAreRefusedBeforeAnyInterpreterRuns() throws Exception {
        assertThatThrownBy(() -> sessions.create(ME, new SessionManager.CreateRequest("cobol", null, null, null)))
                .isInstanceOf(RequestException.class).extracting("code").isEqualTo(ErrorCode.UNKNOWN_LANGUAGE);
        assertThatThrownBy(() -> sessions.create(ME, new SessionManager.CreateRequest("c", null, null, null)))
                .extracting("code").isEqualTo(ErrorCode.RUNTIME_UNAVAILABLE);
        assertThatThrownBy(() -> sessions.create(ME, new SessionManager.CreateRequest("python", null, null, "later")))
                .extracting("code").isEqualTo(ErrorCode.INVALID_REQUEST);
        SessionInfo s = python();
        try {
            assertThatThrownBy(() -> run(s, "x = '" + "a".repeat(1024 * 1024) + "'"))
                    .extracting("code").isEqualTo(ErrorCode.CELL_TOO_LARGE);
            assertThatThrownBy(() -> sessions.execute(ME, s.id(), "1", "eval", null)).extracting("code")
                    .isEqualTo(ErrorCode.INVALID_REQUEST);
        } finally {
            sessions.delete(ME, s.id());
        }
    }

    @Test
    void filesRoundTripIncludingBinaryAndStayInTheirSession() throws Exception {
        SessionInfo a = python();
        SessionInfo b = python();
        try {
            byte[] binary = new byte[256 * 1024];
            new Random(7).nextBytes(binary);
            sessions.files(ME, a.id()).upload("data/blob.bin", binary);
            sessions.files(ME, a.id()).upload("note.txt", "héllo".getBytes(StandardCharsets.UTF_8));
            assertThat(run(a, "import hashlib\nhashlib.sha256(open('data/blob.bin','rb').read()).hexdigest()").result())
                    .isEqualTo("'" + HexFormat.of().formatHex(
                            MessageDigest.getInstance("SHA-256").digest(binary)) + "'");
            run(a, "open('made.bin', 'wb').write(bytes(range(256)))");
            byte[] made = sessions.files(ME, a.id()).download("made.bin");
            assertThat(made).hasSize(256);
            assertThat(made[255]).isEqualTo((byte) 255);
            assertThat(sessions.files(ME, a.id()).list("")).extracting(Workspace.Entry::path)
                    .containsExactly("data", "made.bin", "note.txt");
            assertThat(sessions.files(ME, a.id()).list("data")).extracting(Workspace.Entry::path, Workspace.Entry::size)
                    .containsExactly(Tuple.tuple("data/blob.bin", 262144L));
            // b sees none of it, by API or from its code
            assertThat(sessions.files(ME, b.id()).list("")).isEmpty();
            assertThatThrownBy(() -> sessions.files(ME, b.id()).download("note.txt")).extracting("code")
                    .isEqualTo(ErrorCode.FILE_NOT_FOUND);
            assertThat(run(b, "import os\nos.listdir('/workspace')").result()).isEqualTo("[]");
            sessions.files(ME, a.id()).delete("data");
            assertThat(sessions.files(ME, a.id()).list("")).extracting(Workspace.Entry::path)
                    .containsExactly("made.bin", "note.txt");
            assertThat(run(a, "import os\nsorted(os.listdir('.'))").result()).isEqualTo("['made.bin', 'note.txt']");
        } finally {
            sessions.delete(ME, a.id());
            sessions.delete(ME, b.id());
        }
    }

    @Test
    void idleSessionsAreReaped() throws Exception {
        SessionInfo s = sessions.create(ME, new SessionManager.CreateRequest("python", null, 1L, null));
        Path dir = data.resolve("sessions").resolve(s.id());
        assertThat(dir).isDirectory();
        CLOCK.advance(Duration.ofMillis(900));
        sessions.reap();
        assertThat(sessions.list(ME)).as("idle 0.9 s of 1 s").extracting(SessionInfo::id).contains(s.id());
        assertThat(run(s, "1").status()).isEqualTo(CellStatus.OK); // a cell makes it new again
        CLOCK.advance(Duration.ofMillis(900));
        sessions.reap();
        assertThat(sessions.list(ME)).as("idle 0.9 s since its cell").extracting(SessionInfo::id).contains(s.id());
        CLOCK.advance(Duration.ofMillis(200));
        sessions.reap();
        assertThat(sessions.list(ME)).extracting(SessionInfo::id).doesNotContain(s.id());
        assertThat(dir).doesNotExist();
        assertThatThrownBy(() -> run(s, "1")).extracting("code").isEqualTo(ErrorCode.SESSION_NOT_FOUND);
    }

    @Test
    void anIdleSessionMadeToPauseIsPausedNotDeletedAndEndsOnlyWithItsLifetime() throws Exception {
        SessionInfo s = sessions.create(ME, new SessionManager.CreateRequest("python", null, 1L, "replay", null, null,
                "pause", null));
        assertThat(s.onIdle()).isEqualTo("pause");
        assertThat(run(s, "x = 41").status()).isEqualTo(CellStatus.OK);
        CLOCK.advance(Duration.ofMillis(1100));
        sessions.reap();
        assertThat(sessions.get(ME, s.id()).state()).as("idle past its timeout: paused, kept").isEqualTo("paused");
        CLOCK.advance(Duration.ofMinutes(30));
        sessions.reap();
        assertThat(sessions.get(ME, s.id()).state()).as("paused, it does not go idle").isEqualTo("paused");
        CellResult back = run(s, "x + 1");
        assertThat(back.resumed()).isTrue();
        assertThat(back.result()).as("its cells replayed").isEqualTo("42");
        CLOCK.advance(Duration.ofMinutes(31));
        sessions.reap();
        assertThat(sessions.list(ME)).as("past its lifetime it goes, paused or not").extracting(SessionInfo::id)
                .doesNotContain(s.id());
        assertThatThrownBy(() -> sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null, null,
                null, "sleep", null))).extracting("code").isEqualTo(ErrorCode.INVALID_REQUEST);
    }

    @Test
    void aSessionEndsAtItsLifetimeHoweverBusy() throws Exception {
        SessionInfo s = sessions.create(ME, new SessionManager.CreateRequest("python", null, 3000L, null));
        CLOCK.advance(Duration.ofMinutes(50));
        assertThat(run(s, "1").status()).isEqualTo(CellStatus.OK);
        sessions.reap();
        assertThat(sessions.list(ME)).as("50 min of a 1 h life").extracting(SessionInfo::id).contains(s.id());
        CLOCK.advance(Duration.ofMinutes(11));
        sessions.reap();
        assertThat(sessions.list(ME)).as("61 min, used 11 min ago").extracting(SessionInfo::id).doesNotContain(s.id());
    }

    @Test
    void theCapsOnSessionsHold() throws Exception {
        List<SessionInfo> mine = new ArrayList<>();
        try {
            while (mine.size() < 8) {
                mine.add(python());
            }
            assertThatThrownBy(SessionManagerTest::python).isInstanceOf(RequestException.class)
                    .extracting("code").isEqualTo(ErrorCode.TOO_MANY_SESSIONS);
        } finally {
            for (SessionInfo s : mine) {
                sessions.delete(ME, s.id());
            }
        }
    }

    @Test
    void aRestartedServerResumesSessionsWithTheirFilesAndReplays(@TempDir Path other) throws Exception {
        Crucible c = TestHost.crucible();
        SessionConfig config = SessionConfig.defaults(other);
        String plain;
        String replay;
        try (SessionManager first = SessionManager.start(c.sandbox(), c.runtimes(), config)) {
            plain = first.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            replay = first.create(ME, new SessionManager.CreateRequest("python", null, null, "replay")).id();
            for (String id : new String[] {plain, replay}) {
                first.execute(ME, id, "x = 6 * 7\nopen('state.txt', 'w').write(str(x))", null, null);
                first.execute(ME, id, "y = x + 1", null, null);
                first.execute(ME, id, "1 / 0", null, null); // failed cells are not replayed
            }
        } // the interpreters are gone as after a kill; the files stay
        try (SessionManager second = SessionManager.start(c.sandbox(), c.runtimes(), config)) {
            assertThat(second.list(ME)).extracting(SessionInfo::state).containsOnly("dormant");
            CellResult resumed = second.execute(ME, plain, "open('state.txt').read()", null, null);
            assertThat(resumed.resumed()).isTrue();
            assertThat(resumed.result()).isEqualTo("'42'");
            assertThat(second.execute(ME, plain, "'x' in globals()", null, null).result()).isEqualTo("False");
            CellResult replayed = second.execute(ME, replay, "y", null, null);
            assertThat(replayed.resumed()).isTrue();
            assertThat(replayed.replayed()).isEqualTo(2);
            assertThat(replayed.result()).isEqualTo("43");
            assertThatThrownBy(() -> second.execute(OTHER, replay, "y", null, null)).extracting("code")
                    .isEqualTo(ErrorCode.SESSION_NOT_FOUND);
            second.delete(ME, plain);
            second.delete(ME, replay);
        }
        assertThat(Files.list(other.resolve("sessions")).count()).isZero();
    }
}
