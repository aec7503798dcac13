package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import dev.crucible.client.CellResult;
import dev.crucible.client.CommandResult;
import dev.crucible.client.CrucibleClient;
import dev.crucible.client.CrucibleException;
import dev.crucible.client.Evaluation;
import dev.crucible.client.ExecuteRequest;
import dev.crucible.client.ExecuteResult;
import dev.crucible.client.FileEntry;
import dev.crucible.client.ProcessInfo;
import dev.crucible.client.Rewards;
import dev.crucible.client.Session;
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
                .withLimits(ExecuteRequest.Limits.timeout(5000)).withIsolation("namespaces"));
        assertThat(r.ok()).as(r.toString()).isTrue();
        assertThat(r.isolation()).isEqualTo("namespaces");
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
        Session session = crucible.sessions().create(Session.Request.of("python"));
        try {
            assertThat(session.id()).matches("[0-9a-f]{32}");
            assertThat(session.info().isolation()).isIn("namespaces", "gvisor");
            assertThat(session.run("x = 20").status()).isEqualTo("ok");
            CellResult cell = session.run("x * 2 + 2");
            assertThat(cell.result()).isEqualTo("42");
            assertThat(cell.executionCount()).isEqualTo(2);
            CellResult failed = session.run("1 / 0");
            assertThat(failed.error().name()).isEqualTo("ZeroDivisionError");
            assertThat(session.run(new Session.Cell("1 + 1", "exec", 5000L)).result()).as("exec shows no value")
                    .isNull();

            byte[] binary = new byte[256];
            for (int i = 0; i < binary.length; i++) {
                binary[i] = (byte) i;
            }
            Session.Files files = session.files();
            files.write("dir/with space/b.bin", binary);
            assertThat(files.read("dir/with space/b.bin")).isEqualTo(binary);
            assertThat(session.run("len(open('dir/with space/b.bin','rb').read())").result()).isEqualTo("256");
            assertThat(files.list("dir/with space")).extracting(FileEntry::path, FileEntry::size)
                    .containsExactly(tuple("dir/with space/b.bin", 256L));
            files.delete("dir/with space/b.bin");
            assertThat(files.list("dir/with space")).isEmpty();
            // an absolute path is the session's whole file system: its /tmp, and its /workspace by that name
            files.write("/tmp/with space.txt", "abs".getBytes());
            assertThat(files.read("/tmp/with space.txt")).isEqualTo("abs".getBytes());
            assertThat(files.list("/tmp")).extracting(FileEntry::path).contains("/tmp/with space.txt");
            files.delete("/tmp/with space.txt");
            assertThat(files.list("/workspace/dir")).extracting(FileEntry::path)
                    .containsExactly("/workspace/dir/with space");

            assertThat(crucible.sessions().list()).extracting(SessionInfo::id).contains(session.id());
            assertThat(crucible.sessions().get(session.id()).info().language()).isEqualTo("python");
            CommandResult command = session.commands().run("ls 'dir/with space' | wc -l; exit 2");
            assertThat(command.exitCode()).isEqualTo(2);
            assertThat(command.stdout()).isEqualTo("0\n");
            assertThat(session.commands().run(Session.Command.argv("cat").withStdin("piped").withTimeoutMs(5000))
                    .stdout()).isEqualTo("piped");
            assertThat(session.commands().run(Session.Command.argv("sh", "-c", "echo $GREETING; pwd")
                    .withEnv(Map.of("GREETING", "hi")).withCwd("/tmp")).stdout()).isEqualTo("hi\n/tmp\n");
            Session.Processes processes = session.processes();
            ProcessInfo process = session.commands().start(Session.Command.shell("read x; echo \"bg $x\"")
                    .withStdinOpen());
            assertThat(process.running()).isTrue();
            assertThat(processes.list()).extracting(ProcessInfo::pid).contains(process.pid());
            assertThat(processes.writeStdin(process.pid(), "in\n", true)).isEqualTo(3);
            ProcessInfo.Output output = processes.output(process.pid(), 0, 5000);
            StringBuilder stdout = new StringBuilder(output.stdout());
            for (int turns = 0; turns < 12 && !output.ended(); turns++) {
                output = processes.output(process.pid(), output.next(), 5000);
                stdout.append(output.stdout());
            }
            assertThat(stdout.toString()).isEqualTo("bg in\n");
            assertThat(output.process().exitCode()).isZero();
            ProcessInfo onTerminal = session.commands().start(Session.Command.argv("sleep", "600").withPty(24, 80));
            assertThat(onTerminal.pty()).isEqualTo(new ProcessInfo.Pty(24, 80));
            assertThat(processes.resize(onTerminal.pid(), 40, 100)).isTrue();
            assertThat(processes.list()).filteredOn(p -> p.pid() == onTerminal.pid()).extracting(ProcessInfo::pty)
                    .containsExactly(new ProcessInfo.Pty(40, 100));
            long sleeper = session.commands().start(Session.Command.argv("sleep", "600")).pid();
            assertThat(processes.signal(sleeper, "KILL")).isTrue();
            session.commands().start(Session.Command.argv("python3", "-m", "http.server", "8125", "--bind",
                    "127.0.0.1"));
            await().atMost(Duration.ofSeconds(60)).until(() -> session.ports().stream().anyMatch(p -> p.port() == 8125));
            SessionInfo.Preview link = session.preview(8125, 60);
            assertThat(link.url()).contains("/v1/previews/");
            assertThat(link.port()).isEqualTo(8125);
            assertThat(session.interrupt()).isFalse(); // nothing running
            SessionInfo.Pause paused = session.pause();
            assertThat(paused.state()).isEqualTo("paused");
            assertThat(paused.keeps()).isIn("files", "replay");
            assertThat(session.refresh().state()).isEqualTo("paused");
            assertThat(session.resume().restored()).isEqualTo(paused.keeps());
            List<Session> forked = session.fork(1);
            assertThat(forked).hasSize(1);
            Session fork = forked.getFirst();
            assertThat(fork.id()).isNotEqualTo(session.id());
            assertThat(fork.refresh().state()).isEqualTo("paused");
            fork.delete();
            SessionInfo.Snapshot snap = session.snapshot("java-client");
            assertThat(snap.keeps()).isIn("files", "replay");
            assertThat(snap.sessionId()).isEqualTo(session.id());
            assertThat(crucible.sessions().snapshots()).extracting(SessionInfo.Snapshot::name)
                    .containsExactly("java-client");
            Session made = crucible.sessions().create(Session.Request.fromSnapshot("java-client"));
            assertThat(made.info().state()).isEqualTo("running");
            assertThat(made.info().restored()).isIn("files", "replay");
            made.delete();
            crucible.sessions().deleteSnapshot("java-client");
            assertThatThrownBy(() -> session.commit("local/never:1")).as("a host session is no image")
                    .isInstanceOfSatisfying(CrucibleException.class, e -> assertThat(e.code())
                            .isEqualTo("commit_unavailable"));
            assertThat(crucible.sessions().snapshots()).isEmpty();
            assertThat(session.lockNetwork(List.of()).network().path("allow").isEmpty()).as("locked").isTrue();
            session.restart();
            assertThat(session.run("'x' in globals()").result()).isEqualTo("False");
        } finally {
            session.delete();
        }
        assertThatThrownBy(() -> crucible.sessions().get(session.id())).isInstanceOfSatisfying(
                CrucibleException.class, e -> {
                    assertThat(e.status()).isEqualTo(404);
                    assertThat(e.code()).isEqualTo("session_not_found");
                });
    }

    /** Every option of a new session reaches the server, and what it answers comes back typed. */
    @Test
    void aSessionMadeWithEveryOption() {
        Session session = crucible.sessions().create(Session.Request.of("python")
                .withLimits(new Session.Limits(256, 64, 0.5, 7000L, 4096)).withIdleTimeoutS(120)
                .withRestore("replay").withOnIdle("pause"));
        try {
            SessionInfo info = session.info();
            assertThat(info.limits()).isEqualTo(new SessionInfo.Limits(256, 64, 0.5, 7000, 4096));
            assertThat(info.idleTimeoutS()).isEqualTo(120);
            assertThat(info.restore()).isEqualTo("replay");
            assertThat(info.onIdle()).isEqualTo("pause");
            assertThat(info.lastUsedAt()).isNotNull();
        } finally {
            session.delete();
        }
        assertThatThrownBy(() -> crucible.sessions().create(Session.Request.of("python").withOnIdle("explode")))
                .isInstanceOfSatisfying(CrucibleException.class, e -> assertThat(e.status()).isEqualTo(400));
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
