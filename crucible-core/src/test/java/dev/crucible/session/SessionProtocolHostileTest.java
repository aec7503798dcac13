package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10, class 2: a cell runs inside the agent's process and can write to the agent's answer channel. It must
 * not make the server hold more than one bounded frame, nor answer a later request: an unsolicited, foreign or
 * oversized frame is a protocol violation that restarts the interpreter, and the next cell runs fresh.
 */
class SessionProtocolHostileTest {
    static final String ME = "owner-a";
    /** Python: a frame on the agent's own answer descriptor. */
    static final String PY_FRAME = """
            import __main__, json, os, struct, threading, time
            FD = __main__._OUT.fileno()
            def frame(obj, pad=0):
                body = json.dumps(dict(obj, pad='x' * pad)).encode()
                return struct.pack('>I', len(body)) + body
            """;

    @TempDir Path data;
    SessionManager sessions;

    @BeforeEach
    void start() throws Exception {
        Crucible c = TestHost.crucible();
        sessions = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data));
    }

    @AfterEach
    void stop() {
        sessions.close();
    }

    String session(String language) throws InterruptedException {
        return sessions.create(ME, new SessionManager.CreateRequest(language, null, null, null)).id();
    }

    static void assertViolation(CellResult r) {
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("runtime_error");
        assertThat(r.error().name()).as(r.toString()).isEqualTo("ProtocolViolation");
        assertThat(r.stdout()).doesNotContain("FORGED");
    }

    @Test
    void aFrameForgedAfterItsCellEndedNeverAnswersTheNextRequest() throws Exception {
        String id = session("python");
        CellResult armed = sessions.execute(ME, id, PY_FRAME + """
                def forge():
                    time.sleep(0.3)  # after this cell's answer went out
                    os.write(FD, frame({'status': 'ok', 'stdout': 'FORGED', 'execution_count': 99}))
                threading.Thread(target=forge, daemon=True).start()
                'armed'
                """, null, null);
        assertThat(armed.result()).as(armed.toString()).isEqualTo("'armed'");

        CellResult next = sessions.execute(ME, id, "import time\ntime.sleep(1.5)\nprint('real')", null, null);
        assertViolation(next);

        CellResult fresh = sessions.execute(ME, id, "print('real')", null, null);
        assertThat(fresh.stdout()).as(fresh.toString()).isEqualTo("real\n");
        assertThat(fresh.restarted()).isTrue();
    }

    @Test
    void aFrameWrittenByTheCellBeforeItsRealAnswerIsAViolation() throws Exception {
        String id = session("python");
        CellResult r = sessions.execute(ME, id, PY_FRAME
                + "os.write(FD, frame({'status': 'ok', 'stdout': 'FORGED', 'id': 'guess'}))\nprint('real')", null, null);
        assertViolation(r);
        assertThat(sessions.execute(ME, id, "print(6 * 7)", null, null).stdout()).isEqualTo("42\n");
    }

    @Test
    void nothingIsReadAheadOfARequestSoAFloodWaitsInThePipe() throws Exception {
        String id = session("python");
        sessions.execute(ME, id, PY_FRAME + """
                def flood():
                    time.sleep(0.2)
                    chunk, sent = frame({'status': 'ok'}, pad=4000), 0
                    for _ in range(16384):  # 64 MiB if anything reads it
                        sent += os.write(FD, chunk)
                        with open('/workspace/sent.tmp', 'w') as f:
                            f.write(str(sent))
                        os.replace('/workspace/sent.tmp', '/workspace/sent')
                threading.Thread(target=flood, daemon=True).start()
                """, null, null);
        Path sent = data.resolve("sessions").resolve(id).resolve("workspace").resolve("sent");
        AtomicLong seen = new AtomicLong(-1);
        long last = await("the writer stalled (the pipe is full) or done: the same count two looks in a row")
                .atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
                .until(() -> Files.exists(sent) ? Long.parseLong(Files.readString(sent).strip()) : -1,
                        now -> now == seen.getAndSet(now) && now > 0);
        assertThat(last).as("bytes the cell got into the answer channel while no request was outstanding")
                .isPositive().isLessThan(4L << 20);

        assertViolation(sessions.execute(ME, id, "print('real')", null, null));
        assertThat(sessions.execute(ME, id, "print('real')", null, null).stdout()).isEqualTo("real\n");
    }

    @Test
    void anOversizedFrameIsRefusedAtItsHeader() throws Exception {
        String id = session("python");
        CellResult r = sessions.execute(ME, id, PY_FRAME + "os.write(FD, struct.pack('>I', 100 << 20))", null, 10_000L);
        assertViolation(r);
        assertThat(sessions.execute(ME, id, "print('real')", null, null).stdout()).isEqualTo("real\n");
    }

    @Test
    void aLargeAnswerIsCutToFitItsFrameInsteadOfBreakingTheSession() throws Exception {
        String id = session("python");
        CellResult r = sessions.execute(ME, id,
                "import sys\nsys.stdout.write('\\x01' * 3_000_000)\nsys.stderr.write('\\x02' * 3_000_000)\n'y' * 30_000_000",
                null, null);
        assertThat(r.status().wireName()).as(r.error() == null ? "" : r.error().toString()).isEqualTo("ok");
        assertThat(r.stdoutTruncated()).isTrue();
        assertThat(r.stdout()).isNotEmpty().matches("\u0001+");
        assertThat(r.result()).startsWith("'yyyy");
        assertThat(sessions.execute(ME, id, "print('still here')", null, null).restarted()).isFalse();
    }

    /**
     * A process left writing without end (the cell's output is read as it comes, and what is left once the cell ended
     * is read up to what the pipe held then): later cells answer, each with its output within its cap.
     */
    @Test
    void aProcessThatNeverStopsWritingHoldsNoCellsAnswer() throws Exception {
        String id = session("python");
        CellResult started = sessions.execute(ME, id, "import subprocess\n"
                + "yes = subprocess.Popen(['sh', '-c', 'while :; do echo noise; echo noise >&2; done'])", null, null);
        assertThat(started.status().wireName()).as(started.toString()).isEqualTo("ok");
        for (int i = 0; i < 5; i++) {
            CellResult r = sessions.execute(ME, id, "print('mine'); 6 * 7", null, 5_000L);
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
            assertThat(r.result()).isEqualTo("42");
            assertThat(r.stdout().length()).isLessThanOrEqualTo(1 << 20);
            if (!r.stdoutTruncated()) { // the noise may fill the cap before the cell prints: then its line is cut
                assertThat(r.stdout()).contains("mine"); // print writes "mine" and "\n" apart: noise may come between
            }
        }
        CellResult stopped = sessions.execute(ME, id, "yes.kill(); yes.wait()", null, null);
        assertThat(stopped.status().wireName()).isEqualTo("ok");
        CellResult quiet = sessions.execute(ME, id, "import time; time.sleep(0.2); print('alone')", null, null);
        assertThat(quiet.stdout()).endsWith("alone\n");
        assertThat(quiet.restarted()).isFalse();
    }

    @Test
    void aJavaScriptCellCannotAnswerALaterRequestEither() throws Exception {
        String id = session("javascript");
        CellResult armed = sessions.execute(ME, id, """
                const fs = require('fs');
                const body = Buffer.from(JSON.stringify({status: 'ok', stdout: 'FORGED', execution_count: 99}));
                const head = Buffer.alloc(4); head.writeUInt32BE(body.length);
                setTimeout(() => fs.writeSync(5, Buffer.concat([head, body])), 300);
                'armed'
                """, null, null);
        assertThat(armed.result()).as(armed.toString()).isEqualTo("'armed'");
        assertViolation(sessions.execute(ME, id,
                "await new Promise((r) => setTimeout(r, 1500)); console.log('real')", null, null));
        CellResult fresh = sessions.execute(ME, id, "console.log('real')", null, null);
        assertThat(fresh.stdout()).as(fresh.toString()).isEqualTo("real\n");
    }
}
