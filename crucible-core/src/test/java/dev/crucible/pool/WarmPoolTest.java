package dev.crucible.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.SandboxConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Requests served by pre-started sandboxes see the same world as cold runs, and nothing passes between them. */
class WarmPoolTest {
    static Crucible crucible;
    static WarmPool pool;

    @BeforeAll
    static void start() {
        crucible = Crucible.start(SandboxConfig.defaults().withSlots(8), null);
        pool = crucible.startPool(Map.of("python", 2, "javascript", 1));
    }

    @AfterAll
    static void stop() throws Exception {
        crucible.close();
    }

    /** Waits (bounded) for the pool to be full again so that the next request is a hit. */
    static void awaitReady(int size) throws InterruptedException {
        // a bound, not a timing: a busy machine starves the pool
        await("the pool full again").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(10))
                .until(pool::size, n -> n >= size);
        assertThat(pool.size()).isEqualTo(size);
    }

    static ExecuteResult warm(String language, String code, String stdin, List<String> args) throws Exception {
        awaitReady(3);
        long hits = pool.hits();
        ExecuteResult r = crucible.executor().execute(new ExecuteRequest(language, code, stdin, args, null, null));
        assertThat(pool.hits()).as("served from the pool").isEqualTo(hits + 1);
        return r;
    }

    static ExecuteResult cold(String language, String code, String stdin, List<String> args) throws Exception {
        // another memory limit than the runtime's default never comes from the pool
        long misses = pool.misses();
        long hits = pool.hits();
        ExecuteResult r = crucible.executor().execute(new ExecuteRequest(language, code, stdin, args, null,
                new LimitsSpec(null, null, 200, null, null)));
        assertThat(pool.hits()).isEqualTo(hits);
        assertThat(pool.misses()).isEqualTo(misses);
        return r;
    }

    @Test
    void pythonProgramSeesTheSameWorldAsACold() throws Exception {
        String code = """
                import sys, os
                print(__name__, __file__, sys.argv, repr(sys.stdin.read()), os.getcwd(), sys.path[0])
                print(sorted(os.listdir('/tmp')), sorted(os.listdir('.')))
                print('json' in sys.modules, '_crucible_agent' in dir(sys.modules['__main__']))
                open('/tmp/marker', 'w').write('x')
                """;
        ExecuteResult w = warm("python", code, "the input\n", List.of("a", "b c"));
        ExecuteResult c = cold("python", code, "the input\n", List.of("a", "b c"));
        assertThat(w.status().wireName()).isEqualTo("ok");
        assertThat(w.stdout()).startsWith("__main__ /workspace/main.py ['main.py', 'a', 'b c'] 'the input\\n' /workspace /workspace\n[] ['main.py']\n");
        assertThat(w.stdout()).isEqualTo(c.stdout());
        assertThat(w.stderr()).isEqualTo(c.stderr()).isEmpty();
    }

    @Test
    void pythonErrorsLookTheSameAsCold() throws Exception {
        for (String code : List.of("def f():\n    raise ValueError('boom')\nf()\n", "print('unclosed'\n",
                "import sys\nsys.exit(3)\n", "import os\nos._exit(4)\n", "import sys\nsys.exit('a message')\n",
                "import sys\nprint('partial', end='')\nsys.exit(None)\n",
                "import atexit\natexit.register(lambda: print('atexit ran'))\nprint('main')\n",
                "import threading, time\nt = threading.Thread(target=lambda: (time.sleep(0.2), print('thread done')))\n"
                        + "t.start()\nprint('main done')\n",
                "raise KeyboardInterrupt\n", "import sys\nsys.stdout.write('x' * 100000)\n",
                // competitive programmers buffer stdout in a StringIO and write it to sys.__stdout__ at exit
                "import atexit, io, sys\nbuf = io.StringIO()\nsys.stdout = buf\nprint(42)\n"
                        + "atexit.register(lambda: sys.__stdout__.write(buf.getvalue()))\n")) {
            ExecuteResult w = warm("python", code, null, List.of());
            ExecuteResult c = cold("python", code, null, List.of());
            assertThat(w.status()).as(code).isEqualTo(c.status());
            if (!c.stdoutTruncated()) { // killed at the cap or done first: a race with the kernel, not a difference
                assertThat(w.exitCode()).as(code).isEqualTo(c.exitCode());
            }
            assertThat(w.stderr()).as(code).isEqualTo(c.stderr());
            assertThat(w.stdoutTruncated()).as(code).isEqualTo(c.stdoutTruncated());
            if (c.stdoutTruncated()) { // killed at the cap: how much more it wrote before it died is the kernel's timing
                assertThat(w.stdout()).as(code).startsWith(c.stdout().substring(0, c.stdout().indexOf("[crucible:")));
            } else {
                assertThat(w.stdout()).as(code).isEqualTo(c.stdout());
            }
            if (!c.stdoutTruncated()) {
                assertThat(w.signal()).as(code).isEqualTo(c.signal());
            }
        }
    }

    @Test
    void nothingPassesFromOneRequestToTheNext() throws Exception {
        String code = """
                import os, sys, builtins
                seen = [os.path.exists('/tmp/marker'), os.path.exists('left.txt'), hasattr(builtins, 'planted'),
                        os.environ.get('PLANTED')]
                open('/tmp/marker', 'w').write('x'); open('left.txt', 'w').write('x')
                builtins.planted = 1; os.environ['PLANTED'] = '1'
                print(seen, os.getpid())
                """;
        for (int i = 0; i < 4; i++) {
            ExecuteResult r = warm("python", code, null, List.of());
            assertThat(r.stdout()).startsWith("[False, False, False, None]");
        }
    }

    @Test
    void javascriptProgramIsTheMainModuleWithItsArgvAndStdin() throws Exception {
        String code = """
                const input = require('fs').readFileSync(0, 'utf8');
                console.log(require.main === module, __filename, process.argv.slice(2), JSON.stringify(input),
                  process.cwd(), typeof globalThis.planted);
                globalThis.planted = 1;
                """;
        ExecuteResult w = warm("javascript", code, "in\n", List.of("x", "y"));
        ExecuteResult c = cold("javascript", code, "in\n", List.of("x", "y"));
        assertThat(w.stdout()).isEqualTo("true /workspace/main.js [ 'x', 'y' ] \"in\\n\" /workspace undefined\n");
        assertThat(w.stdout()).isEqualTo(c.stdout());
        ExecuteResult thrown = warm("javascript", "throw new Error('boom')", null, List.of());
        assertThat(thrown.status().wireName()).isEqualTo("runtime_error");
        assertThat(thrown.stderr()).contains("Error: boom").contains("/workspace/main.js:1");
    }

    @Test
    void limitsApplyFromTheMomentARequestClaimsTheSandbox() throws Exception {
        awaitReady(3);
        long full = System.nanoTime();
        // the state under test: the sandbox to be claimed has waited longer than the request's whole timeout, so a
        // clock started when it was made, not at the claim, would end the run as a timeout
        await("a pooled sandbox older than the request's timeout").atMost(Duration.ofMinutes(1))
                .pollInterval(Duration.ofMillis(20)).until(() -> System.nanoTime() - full > 1_800_000_000L);
        ExecuteResult r = crucible.executor().execute(ExecuteRequest.of("python", "import time\ntime.sleep(0.3)\nprint('done')")
                .withLimits(new LimitsSpec(1500L, null, null, null, null)));
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        assertThat(r.stdout()).isEqualTo("done\n");
        ExecuteResult spin = crucible.executor().execute(ExecuteRequest.of("python", "while True: pass")
                .withLimits(new LimitsSpec(800L, null, null, null, null)));
        assertThat(spin.status().wireName()).isEqualTo("timeout");
        ExecuteResult forks = crucible.executor().execute(ExecuteRequest.of("python", """
                import os, time
                n = 0
                try:
                    while n < 100:
                        if os.fork() == 0:
                            time.sleep(3); os._exit(0)
                        n += 1
                except OSError:
                    print('stopped at', n)
                """).withLimits(new LimitsSpec(null, null, null, null, 12)));
        assertThat(forks.stdout()).startsWith("stopped at");
        ExecuteResult hog = crucible.executor().execute(ExecuteRequest.of("python", "x = b'x' * (400 << 20)"));
        assertThat(hog.status().wireName()).isEqualTo("memory_limit");
    }

    @Test
    void closedPoolLeavesNothingBehind() throws Exception {
        try (Crucible other = Crucible.start(SandboxConfig.defaults().withSlots(4), null)) {
            WarmPool p = other.startPool(Map.of("python", 2));
            await("the new pool full").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(p::size, n -> n >= 2);
            assertThat(p.size()).isEqualTo(2);
            assertThat(other.executor().execute(ExecuteRequest.of("python", "print(7)")).stdout()).isEqualTo("7\n");
            p.close();
            assertThat(p.size()).isZero();
            assertThat(other.sandbox().awaitIdle(Duration.ofSeconds(10))).isTrue();
            assertThat(other.sandbox().host().liveRunGroups()).isZero();
        }
    }
}
