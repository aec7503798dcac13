package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.testhost.Capability;
import java.io.FileInputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The sandbox's isolation and the executor's contract, checked against the real sandbox. */
class ExecutorTest {
    static final String CANARY = System.getenv("SERVER_API_TOKEN");

    final Executor executor = TestHost.crucible().executor();

    @AfterEach
    void nothingLeft() throws Exception {
        TestHost.assertNothingLeft();
    }

    ExecuteResult python(String code) throws InterruptedException {
        return executor.execute(ExecuteRequest.of("python", code));
    }

    @Test
    void sandboxSeesNoVariableOfTheLaunchingEnvironment() throws Exception {
        assertThat(CANARY).as("surefire sets the canary in this JVM's environment").isNotBlank();
        ExecuteResult r = python("import os\nprint(sorted(os.environ))\n"
                + "print(open('/proc/1/environ','rb').read())\nprint(open('/proc/self/environ','rb').read())");
        assertThat(r.status().wireName()).isEqualTo("ok");
        assertThat(r.stdout()).startsWith("['HOME', 'LANG', 'PATH', 'PWD', 'USER']\nb''\n");
        assertThat(r.stdout()).doesNotContain(CANARY).doesNotContain("SERVER_API_TOKEN");
    }

    @Test
    void sandboxInheritsNoFileDescriptor() throws Exception {
        Path held = Files.createTempFile("crucible-held", ".txt");
        try (FileInputStream open = new FileInputStream(held.toFile())) {
            ExecuteResult r = python("import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))");
            // 0, 1, 2 and the descriptor listdir itself holds
            assertThat(r.stdout()).isEqualTo("[0, 1, 2, 3]\n");
            assertThat(open.getFD().valid()).isTrue();
        } finally {
            Files.delete(held);
        }
    }

    @Test
    void hostListenerOnLoopbackIsUnreachable() throws Exception {
        try (ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            ExecuteResult r = python("import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', "
                    + listener.getLocalPort() + "), timeout=2)\n    print('CONNECTED')\nexcept OSError as e:\n"
                    + "    print('refused', e.errno)");
            assertThat(r.stdout()).startsWith("refused").doesNotContain("CONNECTED");
            listener.setSoTimeout(100);
            AtomicInteger accepted = new AtomicInteger();
            try {
                listener.accept().close();
                accepted.incrementAndGet();
            } catch (SocketTimeoutException e) {
                // nothing came
            }
            assertThat(accepted).hasValue(0);
        }
    }

    @Test
    void everyRunGetsAFreshTmpAndWorkspace() throws Exception {
        String code = "import os\nprint(sorted(os.listdir('/tmp')), sorted(os.listdir('.')))\n"
                + "open('/tmp/marker','w').write('x'); open('left.txt','w').write('x')";
        ExecuteResult first = python(code);
        ExecuteResult second = python(code);
        assertThat(first.stdout()).isEqualTo("[] ['main.py']\n");
        assertThat(second.stdout()).isEqualTo(first.stdout());
    }

    @Test
    void sandboxProcessesRunAsAnUnprivilegedHostUid() throws Exception {
        ExecuteResult r = python("import os\nprint(os.getuid(), open('/proc/self/uid_map').read().split())");
        assertThat(r.stdout()).startsWith("1000 ");
        Capability.ROOT.require(TestHost.crucible().sandbox().host().sharedUid() < 0 ? null
                : "sandboxes share the server's uid here: no per-slot uid to check");
        // look at a running sandbox from the host: its processes belong to a slot uid, never to root
        Thread run = Thread.ofVirtual().start(() -> {
            try {
                python("import time\ntime.sleep(1.5)  # crucible-uid-probe");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        long uid;
        try {
            uid = await("the probe's python seen in /proc").atMost(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofMillis(20)).until(() -> hostUidOf("crucible-uid-probe"), u -> u >= 0);
        } finally {
            run.join();
        }
        long base = TestHost.crucible().sandbox().host().uidBase();
        assertThat(uid).isBetween(base, base + 63);
    }

    /** The host uid of the sandboxed python whose program contains {@code marker}, seen through /proc, or -1. */
    private static long hostUidOf(String marker) throws Exception {
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    if (Files.readString(p.resolve("cmdline")).equals("/usr/bin/python3\0main.py\0")
                            && Files.readString(p.resolve("root/workspace/main.py")).contains(marker)) {
                        return (Integer) Files.getAttribute(p, "unix:uid");
                    }
                } catch (Exception e) {
                    // not ours, or gone
                }
            }
        }
        return -1;
    }

    @Test
    void stdinArgsAndFilesReachTheProgram() throws Exception {
        ExecuteRequest request = new ExecuteRequest("py", "import sys\nprint(sys.argv[1:], input(), open('data/in.txt').read(),"
                + " open('blob.bin','rb').read())", "line one\n", List.of("a", "b c"),
                List.of(new FileInput("data/in.txt", "text file", null),
                        new FileInput("blob.bin", Base64.getEncoder().encodeToString(new byte[] {0, 1, (byte) 255}), FileInput.Encoding.BASE64)),
                null);
        ExecuteResult r = executor.execute(request);
        assertThat(r.stdout()).isEqualTo("['a', 'b c'] line one text file b'\\x00\\x01\\xff'\n");
    }

    @Test
    void compiledProgramRunsManyInputsAfterOneCompile() throws Exception {
        var runtime = executor.runtimeFor("c");
        String code = "#include <stdio.h>\nint main(void){int a,b; if(scanf(\"%d %d\",&a,&b)!=2) return 2;"
                + " printf(\"%d\\n\", a+b); return 0;}";
        try (Program program = executor.prepare(runtime, code, null)) {
            assertThat(program.compileResult().status().wireName()).isEqualTo("ok");
            for (int i = 0; i < 5; i++) {
                ExecuteResult r = program.run(i + " " + (i * 10), List.of(), runtime.limits());
                assertThat(r.stdout()).isEqualTo((i * 11) + "\n");
            }
            assertThat(program.run("nonsense", List.of(), runtime.limits()).status().wireName()).isEqualTo("runtime_error");
        }
    }

    @Test
    void cpuLimitStopsABusyProgramBeforeItsWallClock() throws Exception {
        ExecuteResult r = executor.execute(ExecuteRequest.of("python", "while True: pass")
                .withLimits(new LimitsSpec(20_000L, 700L, null, null, null)));
        assertThat(r.status().wireName()).isEqualTo("timeout");
        assertThat(r.cpuMs()).isGreaterThanOrEqualTo(700);
        assertThat(r.wallMs()).isLessThan(20_000);
    }

    @Test
    void pidsLimitBoundsProcesses() throws Exception {
        ExecuteResult r = executor.execute(ExecuteRequest.of("python", """
                import os, time
                n = 0
                try:
                    while n < 200:
                        if os.fork() == 0:
                            time.sleep(5); os._exit(0)
                        n += 1
                except OSError as e:
                    print('stopped at', n, e.errno)
                """).withLimits(new LimitsSpec(null, null, null, null, 16)));
        assertThat(r.stdout()).startsWith("stopped at ");
        int n = Integer.parseInt(r.stdout().split(" ")[2]);
        assertThat(n).isLessThan(16);
    }

    @Test
    void badRequestsAreRefusedBeforeAnySandboxStarts() {
        assertThatThrownBy(() -> executor.execute(ExecuteRequest.of("cobol", "x")))
                .isInstanceOf(RequestException.class).hasMessageContaining("unknown language 'cobol'")
                .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.UNKNOWN_LANGUAGE);
        assertThatThrownBy(() -> executor.execute(ExecuteRequest.of("python", null)))
                .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.INVALID_REQUEST);
        assertThatThrownBy(() -> executor.execute(ExecuteRequest.of("python", "1")
                .withLimits(new LimitsSpec(null, null, 1 << 20, null, null))))
                .hasMessageContaining("memory_mb must be between")
                .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.INVALID_LIMITS);
        for (String bad : List.of("../../etc/cron.d/evil", "/etc/passwd", "a\u0000b", "..", ".", "", "a/../../b",
                "a\\..\\b", "x/", "\u202etxt.exe", "a".repeat(4096), "main.py")) {
            ExecuteRequest request = new ExecuteRequest("python", "print(1)", null, null,
                    List.of(new FileInput(bad, "x", null)), null);
            assertThatThrownBy(() -> executor.execute(request)).as(bad)
                    .isInstanceOf(RequestException.class)
                    .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.INVALID_FILE);
        }
        assertThatThrownBy(() -> executor.execute(new ExecuteRequest("python", "1", null, null,
                List.of(new FileInput("a.bin", "!!!", FileInput.Encoding.BASE64)), null))).hasMessageContaining("not valid base64");
        assertThatThrownBy(() -> executor.execute(new ExecuteRequest("python", "1", null, List.of("a\u0000b"), null, null)))
                .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.INVALID_REQUEST);
    }
}
