package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.client.CellResult;
import dev.crucible.client.CrucibleClient;
import dev.crucible.client.CrucibleException;
import dev.crucible.client.Evaluation;
import dev.crucible.client.ExecuteRequest;
import dev.crucible.client.ExecuteResult;
import dev.crucible.client.FileEntry;
import dev.crucible.client.Rewards;
import dev.crucible.client.SessionInfo;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The Java SDK (crucible-client) against the real server on a free port, every route family. */
class ClientTest {
    static CrucibleServer server;
    static CrucibleClient crucible;
    static URI base;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of("sdk-token")).withPool(Map.of()),
                TestHost.crucible());
        base = URI.create("http://127.0.0.1:" + server.port());
        crucible = CrucibleClient.create(base, "sdk-token");
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void executeWithEveryField() {
        ExecuteResult r = crucible.execute(ExecuteRequest.of("python",
                        "import sys\nprint(sys.argv[1:], input(), open('in/data.txt').read())")
                .withStdin("line\n").withArgs(List.of("a", "b"))
                .withFiles(List.of(ExecuteRequest.FileInput.text("in/data.txt", "file-content")))
                .withLimits(ExecuteRequest.Limits.timeout(5000)));
        assertThat(r.ok()).as(r.toString()).isTrue();
        assertThat(r.stdout()).isEqualTo("['a', 'b'] line file-content\n");
        assertThat(r.exitCode()).isZero();
        assertThat(r.wallMs()).isPositive();

        ExecuteResult compiled = crucible.execute(ExecuteRequest.of("c", "int main(void) { return 3 }"));
        assertThat(compiled.status()).isEqualTo("compile_error");
        assertThat(compiled.compile().stderr()).contains("error");
        ExecuteResult slow = crucible.execute(ExecuteRequest.of("python", "while True: pass")
                .withLimits(ExecuteRequest.Limits.timeout(300)));
        assertThat(slow.status()).isEqualTo("timeout");
        assertThat(crucible.runtimes()).anySatisfy(rt -> {
            assertThat(rt.language()).isEqualTo("python");
            assertThat(rt.available()).isTrue();
        });
    }

    @Test
    void sessionsAndTheirFiles() {
        SessionInfo session = crucible.createSession("python");
        try {
            assertThat(session.id()).matches("[0-9a-f]{32}");
            assertThat(crucible.executeCell(session.id(), "x = 20").status()).isEqualTo("ok");
            CellResult cell = crucible.executeCell(session.id(), "x * 2 + 2");
            assertThat(cell.result()).isEqualTo("42");
            assertThat(cell.executionCount()).isEqualTo(2);
            CellResult failed = crucible.executeCell(session.id(), "1 / 0");
            assertThat(failed.error().name()).isEqualTo("ZeroDivisionError");

            byte[] binary = new byte[256];
            for (int i = 0; i < binary.length; i++) {
                binary[i] = (byte) i;
            }
            crucible.upload(session.id(), "dir/with space/b.bin", binary);
            assertThat(crucible.download(session.id(), "dir/with space/b.bin")).isEqualTo(binary);
            assertThat(crucible.executeCell(session.id(), "len(open('dir/with space/b.bin','rb').read())").result())
                    .isEqualTo("256");
            assertThat(crucible.listFiles(session.id(), "dir/with space")).extracting(FileEntry::path, FileEntry::size)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple("dir/with space/b.bin", 256L));
            crucible.deleteFile(session.id(), "dir/with space/b.bin");
            assertThat(crucible.listFiles(session.id(), "dir/with space")).isEmpty();
            // an absolute path is the session's whole file system: its /tmp, and its /workspace by that name
            crucible.upload(session.id(), "/tmp/with space.txt", "abs".getBytes());
            assertThat(crucible.download(session.id(), "/tmp/with space.txt")).isEqualTo("abs".getBytes());
            assertThat(crucible.listFiles(session.id(), "/tmp")).extracting(FileEntry::path)
                    .contains("/tmp/with space.txt");
            crucible.deleteFile(session.id(), "/tmp/with space.txt");
            assertThat(crucible.listFiles(session.id(), "/workspace/dir")).extracting(FileEntry::path)
                    .containsExactly("/workspace/dir/with space");

            assertThat(crucible.sessions()).extracting(SessionInfo::id).contains(session.id());
            assertThat(crucible.session(session.id()).language()).isEqualTo("python");
            dev.crucible.client.CommandResult command = crucible.runCommand(session.id(),
                    "ls 'dir/with space' | wc -l; exit 2");
            assertThat(command.exitCode()).isEqualTo(2);
            assertThat(command.stdout()).isEqualTo("0\n");
            assertThat(crucible.runCommand(session.id(), Map.of("argv", List.of("cat"), "stdin", "piped",
                    "timeout_ms", 5000)).stdout()).isEqualTo("piped");
            dev.crucible.client.ProcessInfo process = crucible.startProcess(session.id(), Map.of("command",
                    "read x; echo \"bg $x\"", "stdin_open", true));
            assertThat(process.running()).isTrue();
            assertThat(crucible.processes(session.id())).extracting(dev.crucible.client.ProcessInfo::pid)
                    .contains(process.pid());
            assertThat(crucible.writeStdin(session.id(), process.pid(), "in\n", true)).isEqualTo(3);
            dev.crucible.client.ProcessInfo.Output output = crucible.processOutput(session.id(), process.pid(), 0, 5000);
            StringBuilder stdout = new StringBuilder(output.stdout());
            for (int turns = 0; turns < 12 && !output.ended(); turns++) {
                output = crucible.processOutput(session.id(), process.pid(), output.next(), 5000);
                stdout.append(output.stdout());
            }
            assertThat(stdout.toString()).isEqualTo("bg in\n");
            assertThat(output.process().exitCode()).isZero();
            dev.crucible.client.ProcessInfo onTerminal = crucible.startProcess(session.id(), Map.of("argv",
                    List.of("sleep", "600"), "pty", Map.of("rows", 24, "cols", 80)));
            assertThat(onTerminal.pty()).isEqualTo(new dev.crucible.client.ProcessInfo.Pty(24, 80));
            assertThat(crucible.resizeProcess(session.id(), onTerminal.pid(), 40, 100)).isTrue();
            assertThat(crucible.processes(session.id())).filteredOn(p -> p.pid() == onTerminal.pid())
                    .extracting(dev.crucible.client.ProcessInfo::pty)
                    .containsExactly(new dev.crucible.client.ProcessInfo.Pty(40, 100));
            long sleeper = crucible.startProcess(session.id(), Map.of("argv", List.of("sleep", "600"))).pid();
            assertThat(crucible.signalProcess(session.id(), sleeper, "KILL")).isTrue();
            crucible.startProcess(session.id(), Map.of("argv", List.of("python3", "-m", "http.server", "8125",
                    "--bind", "127.0.0.1")));
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(60)).until(() -> crucible
                    .ports(session.id()).stream().anyMatch(p -> Integer.valueOf(8125).equals(p.get("port"))));
            Map<String, Object> link = crucible.preview(session.id(), 8125, 60);
            assertThat(link.get("url").toString()).contains("/v1/previews/");
            assertThat(link.get("port")).isEqualTo(8125);
            assertThat(crucible.interrupt(session.id())).isFalse(); // nothing running
            dev.crucible.client.SessionInfo.Pause paused = crucible.pause(session.id());
            assertThat(paused.state()).isEqualTo("paused");
            assertThat(paused.keeps()).isIn("files", "replay");
            assertThat(crucible.session(session.id()).state()).isEqualTo("paused");
            assertThat(crucible.resume(session.id()).restored()).isEqualTo(paused.keeps());
            var forked = crucible.fork(session.id(), 1);
            String fork = forked.get("forks").get(0).get("id").asString();
            assertThat(fork).isNotEqualTo(session.id());
            assertThat(crucible.session(fork).state()).isEqualTo("paused");
            crucible.deleteSession(fork);
            dev.crucible.client.SessionInfo.Snapshot snap = crucible.snapshot(session.id(), "java-client");
            assertThat(snap.keeps()).isIn("files", "replay");
            assertThat(snap.sessionId()).isEqualTo(session.id());
            assertThat(crucible.snapshots()).extracting(dev.crucible.client.SessionInfo.Snapshot::name)
                    .containsExactly("java-client");
            SessionInfo made = crucible.createSession(Map.of("snapshot", "java-client"));
            assertThat(made.state()).isEqualTo("running");
            crucible.deleteSession(made.id());
            crucible.deleteSnapshot("java-client");
            assertThatThrownBy(() -> crucible.commit(session.id(), "local/never:1")).as("a host session is no image")
                    .isInstanceOfSatisfying(CrucibleException.class, e -> assertThat(e.code())
                            .isEqualTo("commit_unavailable"));
            assertThat(crucible.snapshots()).isEmpty();
            crucible.restart(session.id());
            assertThat(crucible.executeCell(session.id(), "'x' in globals()").result()).isEqualTo("False");
        } finally {
            crucible.deleteSession(session.id());
        }
        assertThatThrownBy(() -> crucible.session(session.id())).isInstanceOfSatisfying(CrucibleException.class,
                e -> {
                    assertThat(e.status()).isEqualTo(404);
                    assertThat(e.code()).isEqualTo("session_not_found");
                });
    }

    @Test
    void evaluateAndRewards() {
        Evaluation.Result judged = crucible.evaluate(Evaluation.Request.of("python",
                "def add(a, b):\n    return a + b\n",
                List.of(Evaluation.TestCase.code("assert add(2, 3) == 5"),
                        Evaluation.TestCase.code("assert add(2, 2) == 5"))));
        assertThat(judged.passed()).isEqualTo(1);
        assertThat(judged.total()).isEqualTo(2);
        assertThat(judged.results().get(1).passed()).isFalse();

        Rewards.Result reward = crucible.reward(Rewards.Request.of(List.of(
                new Rewards.Message("user", "Print 6 * 7"),
                new Rewards.Message("assistant", "```python\nprint(6 * 7)\n```")), "42"));
        assertThat(reward.score()).isEqualTo(1.0);
        assertThat(reward.metrics()).containsKey("execution_result");
        Rewards.BatchResult batch = crucible.rewardBatch(List.of(
                Rewards.Request.of(List.of(new Rewards.Message("assistant", "```python\nprint(1)\n```")), "1"),
                Rewards.Request.of(List.of(new Rewards.Message("assistant", "```python\nprint(2)\n```")), "1")));
        assertThat(batch.results()).hasSize(2);
        assertThat(batch.results().getFirst().score()).isEqualTo(1.0);
        assertThat(batch.meanScore()).isLessThan(1.0);
    }

    @Test
    void errorsCarryTheStatusAndTheCode() {
        assertThatThrownBy(() -> crucible.execute(ExecuteRequest.of("cobol", "x")))
                .isInstanceOfSatisfying(CrucibleException.class, e -> {
                    assertThat(e.status()).isEqualTo(400);
                    assertThat(e.code()).isEqualTo("unknown_language");
                    assertThat(e.getMessage()).contains("cobol");
                });
        assertThatThrownBy(() -> CrucibleClient.create(base, "wrong").runtimes())
                .isInstanceOfSatisfying(CrucibleException.class, e -> {
                    assertThat(e.status()).isEqualTo(401);
                    assertThat(e.code()).isEqualTo("unauthorized");
                });
        assertThatThrownBy(() -> CrucibleClient.create(URI.create("http://127.0.0.1:9"), "t").runtimes())
                .isInstanceOfSatisfying(CrucibleException.class, e -> {
                    assertThat(e.status()).isZero();
                    assertThat(e.code()).isEqualTo("connection_failed");
                });
        CrucibleClient impatient = CrucibleClient.create(base, "sdk-token", Duration.ofMillis(300));
        assertThatThrownBy(() -> impatient.execute(ExecuteRequest.of("python", "import time\ntime.sleep(3)")))
                .isInstanceOfSatisfying(CrucibleException.class, e -> assertThat(e.code()).isEqualTo("timeout"));
        assertThatThrownBy(() -> CrucibleClient.create(URI.create("localhost:8080"), null))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
