package dev.crucible.eval;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.exec.ExecuteResult;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 10, class 1: in {@code --isolation batch}, nothing a sample does can change another sample's verdict, output
 * or environment, or leave anything another sample can see. Each test runs an attacker and then victims in ONE batch
 * sandbox and asserts, through the real agent, that every program was answered by the same agent (no fallback) and
 * that the victims saw a sandbox exactly as fresh as the first program did.
 */
class BatchIsolationHostileTest {
    static BatchRunner runner;

    @BeforeAll
    static void start() {
        Crucible c = TestHost.crucible();
        runner = new BatchRunner(c.sandbox(), c.executor().runtimeFor("python"));
    }

    static List<ExecuteResult> batch(String... programs) throws InterruptedException {
        List<ExecuteResult> results = runner.run(List.of(programs), 5_000, DatasetRun.OUTPUT_BYTES);
        assertThat(results).as("every program answered by the one agent").doesNotContainNull();
        return results;
    }

    /** What a fresh sandbox looks like from inside, printed as one line (compared between samples). */
    static final String LOOK = """
            import os, stat, socket
            def look():
                seen = {}
                seen['procs'] = sorted(p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid()))
                for kind in ('msg', 'sem', 'shm'):
                    seen[kind] = open('/proc/sysvipc/' + kind).read().splitlines()[1:]
                for d in ('/', '/tmp', '/workspace', '/dev', '/dev/shm', '/dev/mqueue'):
                    if not os.path.isdir(d):
                        continue
                    names = sorted(n for n in os.listdir(d) if not (d == '/workspace' and n == 'main.py'))
                    seen[d] = [(n, oct(os.lstat(os.path.join(d, n)).st_mode),
                                os.readlink(os.path.join(d, n)) if os.path.islink(os.path.join(d, n)) else '',
                                os.listxattr(os.path.join(d, n), follow_symlinks=False)) for n in names]
                    seen[d + ' mode'] = oct(os.stat(d).st_mode)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect('\\0crucible-leftover')
                    seen['abstract socket'] = 'answered'
                except OSError:
                    seen['abstract socket'] = 'none'
                return seen
            print(look())
            """;

    @Test
    void whatASampleLeavesBehindIsGoneForTheNextWhateverItsKind() throws Exception {
        String attacker = LOOK + """
                import ctypes, subprocess, sys, time
                libc = ctypes.CDLL(None, use_errno=True)
                assert libc.msgget(0x1234, 0o1666) >= 0 and libc.shmget(0x2345, 4096, 0o1666) >= 0
                assert libc.semget(0x3456, 1, 0o1666) >= 0
                librt = ctypes.CDLL('librt.so.1', use_errno=True)
                assert librt.mq_open(b'/crucible-leftover', 0o100 | 2, 0o666, None) >= 0
                open('/dev/shm/sem.leftover', 'w').write('x')
                for d in ('/tmp/deep/er', '/workspace/w', '/dev/shm/d'):
                    os.makedirs(d)
                    open(d + '/f', 'w').write('x')
                os.chmod('/tmp/deep/er', 0); os.chmod('/tmp/deep', 0); os.chmod('/workspace/w', 0)
                os.chmod('/tmp', 0o700); os.chmod('/workspace', 0)
                os.setxattr('/dev/shm', 'user.leftover', b'x') if hasattr(os, 'setxattr') else None
                open('/planted-at-root', 'w').write('x')
                os.unlink('/bin'); os.symlink('/tmp', '/bin')
                os.mkfifo('/dev/shm/fifo')
                subprocess.Popen([sys.executable, '-c', 'import socket, time\\n'
                    's = socket.socket(socket.AF_UNIX); s.bind("\\\\0crucible-leftover"); s.listen()\\n'
                    'time.sleep(100)'], start_new_session=True)
                subprocess.Popen(['sh', '-c', 'while :; do touch /tmp/again 2>/dev/null; sleep 0.01; done'],
                    start_new_session=True)
                time.sleep(0.3)
                """;
        List<ExecuteResult> r = batch(LOOK, attacker, LOOK, LOOK);
        assertThat(r.get(1).status().wireName()).as(r.get(1).stderr()).isEqualTo("ok");
        String fresh = r.get(0).stdout();
        assertThat(fresh).contains("'procs': []");
        assertThat(r.get(1).stdout()).isEqualTo(fresh); // the attacker started from the same fresh sandbox
        assertThat(r.get(2).stdout()).as("the sample after the attacker").isEqualTo(fresh);
        assertThat(r.get(3).stdout()).isEqualTo(fresh);
    }

    /** The attacker returns (prints) what it could reach of the agent: nothing. Later wrong samples still fail. */
    @Test
    void aSampleCannotReachTheAgentThatJudgesTheOthers() throws Exception {
        String attacker = """
                import os, signal
                reached = []
                for agent in sorted({1, os.getppid()}):  # the sandbox's init and whoever forked this program
                    for name, mode in (('mem', 'r+b'), ('mem', 'rb'), ('fd/1', 'wb'), ('fd/0', 'rb'),
                                       ('environ', 'rb'), ('maps', 'rb')):
                        try:
                            with open('/proc/%d/%s' % (agent, name), mode) as f:
                                f.read(1) if 'r' in mode else f.write(b'\\0\\0\\0\\x02{}')
                            reached.append('%d/%s %s' % (agent, name, mode))
                        except OSError:
                            pass
                    try:
                        os.listdir('/proc/%d/fd' % agent)
                        reached.append('%d/fd list' % agent)
                    except OSError:
                        pass
                for sig in (signal.SIGSTOP, signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                    os.kill(os.getppid(), sig)  # the agent is init with no handler: the kernel drops them
                print('reached', reached)
                """;
        String wrong = "import sys\nprint('wrong')\nsys.exit(3)\n";
        List<ExecuteResult> r = batch(attacker, wrong, wrong);
        assertThat(r.get(0).stdout()).isEqualTo("reached []\n");
        assertThat(r.get(1).status().wireName()).isEqualTo("runtime_error");
        assertThat(r.get(1).exitCode()).isEqualTo(3);
        assertThat(r.get(2).exitCode()).isEqualTo(3);
    }

    /** No program's code or output enters the agent's memory, so a later child (a fork of it) cannot find them. */
    @Test
    void aSampleCannotFindAnEarlierSamplesCodeOrOutputInItsOwnMemory() throws Exception {
        String leaker = "print('LE' + 'AK' * 8000)\nimport sys\nprint('LE' + 'AK' * 8000, file=sys.stderr)\n"
                + "secret = 'CODE' + 'LEAK'\n# SOURCELEAKSOURCELEAKSOURCELEAKSOURCELEAK\n";
        String scanner = """
                import re
                needle = ('AK' * 32).encode()
                source = ('SOURCE' + 'LEAK') * 4
                hits, code_hits = 0, 0
                for line in open('/proc/self/maps'):
                    parts = line.split()
                    if 'r' not in parts[1] or (len(parts) > 5 and parts[5].startswith('[v')):
                        continue
                    start, end = (int(x, 16) for x in parts[0].split('-'))
                    try:
                        with open('/proc/self/mem', 'rb') as mem:
                            mem.seek(start)
                            data = mem.read(end - start)
                    except (OSError, OverflowError, ValueError):
                        continue
                    hits += data.count(needle)
                    code_hits += data.count(source.encode())
                print(hits > 50, code_hits > 3)
                """;
        List<ExecuteResult> r = batch(leaker, scanner);
        assertThat(r.get(1).stdout()).as(r.get(1).stderr()).isEqualTo("False False\n");
    }
}
