package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.cli.support.ExitCodes;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** {@code crucible} as a user runs it: the shaded JAR in its own JVM, real files, real sandbox. */
class CliIT {
    static final Path JAR = Path.of("target/crucible.jar");

    record Outcome(int exit, String stdout, String stderr) {}

    static Outcome crucible(Path dir, byte[] stdin, String... args) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-jar", JAR.toAbsolutePath().toString()));
        argv.addAll(List.of(args));
        Process p = new ProcessBuilder(argv).directory(dir.toFile()).start();
        Thread feeder = Thread.ofVirtual().start(() -> {
            try (var in = p.getOutputStream()) {
                in.write(stdin);
            } catch (IOException e) {
                // the command did not read its stdin
            }
        });
        byte[] out = p.getInputStream().readAllBytes();
        byte[] errBytes = p.getErrorStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        feeder.join();
        return new Outcome(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(errBytes, StandardCharsets.UTF_8));
    }

    static Outcome crucible(Path dir, String... args) throws IOException, InterruptedException {
        return crucible(dir, new byte[0], args);
    }

    static void assertOneLineError(Outcome o, String contains) {
        assertThat(o.stdout()).isEmpty();
        assertThat(o.stderr()).contains(contains).doesNotContain("Exception").doesNotContain("\tat ");
        assertThat(o.stderr().strip().lines().count()).as(o.stderr()).isEqualTo(1);
    }

    @Test
    void runPrintsTheProgramsOutputAndExitsWithItsCode(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("hello.py"), "import sys\nprint('hello', sys.argv[1:], input())\n"
                + "print('to stderr', file=sys.stderr)\nsys.exit(7)\n");
        Files.writeString(dir.resolve("in.txt"), "from a file\n");
        Outcome o = crucible(dir, "run", "--stdin", "in.txt", "hello.py", "x", "y");
        assertThat(o.stdout()).isEqualTo("hello ['x', 'y'] from a file\n");
        assertThat(o.stderr()).isEqualTo("to stderr\n");
        assertThat(o.exit()).isEqualTo(7);
    }

    /** A server on the same host holds the first uid block; a one-shot run takes the next and says nothing of it. */
    @Test
    void runNextToAServerPrintsOnlyTheProgramsOutput(@TempDir Path dir, @TempDir Path data) throws Exception {
        ServeIT.Served server = ServeIT.serve(data, "--pool", "python=0,javascript=0");
        try {
            Files.writeString(dir.resolve("p.py"), "import sys\nprint(6 * 7)\n"
                    + "print('only this', file=sys.stderr)\n");
            Outcome o = crucible(dir, "run", "p.py");
            assertThat(o.stdout()).isEqualTo("42\n");
            assertThat(o.stderr()).isEqualTo("only this\n");
            assertThat(o.exit()).isZero();
            Outcome bad = crucible(dir, "run", "--language", "cobol", "p.py");
            assertOneLineError(bad, "unknown language 'cobol'");
        } finally {
            server.stop(Duration.ofSeconds(30));
        }
        assertThat(String.join("\n", server.stderr())).as("the server's log is one line per record")
                .doesNotContain("dev.crucible.").doesNotContain("\tat ");
    }

    /** {@code --help} of every subcommand lists {@code -V, --version}; the JAR prints the version for them. */
    @Test
    void serveAndRunPrintTheVersion(@TempDir Path dir) throws Exception {
        for (String[] args : List.of(new String[] {"serve", "--version"}, new String[] {"run", "-V"})) {
            Outcome o = crucible(dir, args);
            assertThat(o.exit()).as(String.join(" ", args) + ": " + o.stderr()).isZero();
            assertThat(o.stdout()).as(String.join(" ", args)).startsWith("crucible ").endsWith("\n");
        }
    }

    @Test
    void runJsonPrintsTheExecuteResult(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("main.c"), "#include <stdio.h>\nint main(void){puts(\"c works\");return 0;}\n");
        Outcome o = crucible(dir, "run", "--json", "main.c");
        assertThat(o.exit()).isZero();
        JsonNode json = JsonMapper.builder().build().readTree(o.stdout());
        assertThat(json.get("status").asString()).isEqualTo("ok");
        assertThat(json.get("stdout").asString()).isEqualTo("c works\n");
        assertThat(json.get("exit_code").asInt()).isZero();
        assertThat(json.get("compile").get("status").asString()).isEqualTo("ok");
        for (String field : List.of("stderr", "stdout_truncated", "stderr_truncated", "wall_ms", "cpu_ms", "memory_bytes")) {
            assertThat(json.has(field)).as(field).isTrue();
        }
    }

    @Test
    void runBehindGvisorSaysSoAndAnUnknownTierIsOneLine(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("main.py"), "print(open('/proc/version').read().split()[2])\n");
        Outcome unknown = crucible(dir, "run", "--isolation", "vm", "main.py");
        assertThat(unknown.exit()).isNotZero();
        assertThat(unknown.stderr().strip()).doesNotContain("\n").contains("\"namespaces\" or \"gvisor\"");
        Outcome o = crucible(dir, "run", "--json", "--isolation", "gvisor", "main.py");
        if (o.exit() != 0) { // no runsc here: one line with the reason, never a run behind the weaker tier
            assertThat(o.stderr().strip()).doesNotContain("\n").contains("isolation \"gvisor\" is not available");
            Capability.GVISOR.require(o.stderr().strip());
        }
        JsonNode json = JsonMapper.builder().build().readTree(o.stdout());
        assertThat(json.get("isolation").asString()).isEqualTo("gvisor");
        assertThat(json.get("stdout").asString().strip()).isNotEqualTo(
                Files.readString(Path.of("/proc/version")).split(" ")[2]);
    }

    @Test
    void runReadsTheProgramFromStdinWithALanguage(@TempDir Path dir) throws Exception {
        Outcome o = crucible(dir, "echo from-stdin-program".getBytes(StandardCharsets.UTF_8), "run", "-l", "bash", "-");
        assertThat(o.stdout()).isEqualTo("from-stdin-program\n");
        assertThat(o.exit()).isZero();
    }

    @Test
    void timeoutAndMemoryLimitHaveTheirOwnExitCodes(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("spin.js"), "for (;;) {}");
        Outcome timeout = crucible(dir, "run", "--timeout-ms", "1000", "spin.js");
        assertThat(timeout.exit()).isEqualTo(ExitCodes.TIMEOUT);
        assertThat(timeout.stderr()).contains("crucible: timeout");
        Files.writeString(dir.resolve("hog.py"), "x = b'x' * (300 << 20)");
        Outcome memory = crucible(dir, "run", "--memory-mb", "64", "hog.py");
        assertThat(memory.exit()).isEqualTo(ExitCodes.MEMORY_LIMIT);
        assertThat(memory.stderr()).contains("crucible: memory_limit");
    }

    @Test
    void badInputGetsOneLineAndADistinctExitCode(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("ok.py"), "print(1)");
        Files.writeString(dir.resolve("notes.txt"), "hello");
        Files.writeString(dir.resolve("runtimes.toml"), """
                [[runtime]]
                language = "ruby"
                extensions = ["rb"]
                file_name = "main.rb"
                run_command = ["ruby-that-is-not-installed", "{file}"]
                """);
        Files.writeString(dir.resolve("broken.toml"), "[[runtime]\nlanguage = ");
        Files.writeString(dir.resolve("x.rb"), "puts 1");

        Outcome missing = crucible(dir, "run", "nope.py");
        assertOneLineError(missing, "no such file: nope.py");
        assertThat(missing.exit()).isEqualTo(ExitCodes.NO_INPUT);

        Outcome unknownExt = crucible(dir, "run", "notes.txt");
        assertOneLineError(unknownExt, "cannot tell the language of notes.txt");
        assertThat(unknownExt.exit()).isEqualTo(ExitCodes.UNKNOWN_LANGUAGE);

        Outcome unknownLang = crucible(dir, "run", "-l", "cobol", "ok.py");
        assertOneLineError(unknownLang, "unknown language 'cobol'");
        assertThat(unknownLang.exit()).isEqualTo(ExitCodes.UNKNOWN_LANGUAGE);

        Outcome unavailable = crucible(dir, "run", "--runtimes", "runtimes.toml", "x.rb");
        assertOneLineError(unavailable, "runtime ruby is not available: ruby-that-is-not-installed is not installed");
        assertThat(unavailable.exit()).isEqualTo(ExitCodes.RUNTIME_UNAVAILABLE);

        Outcome badToml = crucible(dir, "run", "--runtimes", "broken.toml", "ok.py");
        assertOneLineError(badToml, "invalid runtimes file broken.toml");
        assertThat(badToml.exit()).isEqualTo(ExitCodes.NO_INPUT);

        Outcome badLimit = crucible(dir, "run", "--memory-mb", "999999", "ok.py");
        assertOneLineError(badLimit, "memory_mb must be between");
        assertThat(badLimit.exit()).isEqualTo(ExitCodes.INVALID_REQUEST);

        Outcome notANumber = crucible(dir, "run", "--timeout-ms", "soon", "ok.py");
        assertOneLineError(notANumber, "--timeout-ms");
        assertThat(notANumber.exit()).isEqualTo(ExitCodes.USAGE);

        String data = dir.resolve("data").toString(); // never the machine's data dir: these refusals come before it is used
        for (String[] bad : new String[][] {{"--preview-listen", "8081", "HOST:PORT, e.g. 127.0.0.1:8081"},
                {"--preview-domain", "*.example.com", "is a DNS name"},
                {"--preview-listen", "0.0.0.0:0", "refusing to listen on 0.0.0.0:0 without a token"}}) {
            Outcome refused = crucible(dir, "serve", "--port", "0", "--data-dir", data, bad[0], bad[1]);
            assertOneLineError(refused, bad[2]);
            assertThat(refused.exit()).as(bad[1]).isEqualTo(ExitCodes.USAGE);
        }
    }

    @Test
    void userRuntimeFileAddsALanguageWithItsOwnCommandAndEnv(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("runtimes.toml"), """
                [[runtime]]
                language = "python-unbuffered"
                aliases = ["pyu"]
                file_name = "prog.py"
                run_command = ["python3", "-u", "{file}"]
                env = { GREETING = "from the runtime file" }
                limits = { timeout_ms = 3000 }
                """);
        Files.writeString(dir.resolve("p.py"), "import os, sys\nprint(os.environ['GREETING'], sys.argv[0])");
        Outcome o = crucible(dir, "run", "--runtimes", "runtimes.toml", "-l", "pyu", "p.py");
        assertThat(o.stdout()).isEqualTo("from the runtime file prog.py\n");
        Outcome list = crucible(dir, "runtimes", "--runtimes", "runtimes.toml");
        assertThat(list.stdout()).contains("python-unbuffered").contains("seccomp:").contains("cgroups:");
        // as root with crucible-launch, Python's warm-pool sandboxes are forked from a zygote (docs/zygote.md)
        assertThat(list.stdout()).containsPattern("(?m)^python +\\S+ +available  isolation: namespaces, zygote$")
                .containsPattern("(?m)^bash +\\S+ +available  isolation: namespaces, spawn$")
                .contains("isolation path: zygote for python (1 running")
                .contains("session commands: yes (crucible-supervisor beside the interpreter)");
    }

    @Test
    void sessionIsAReplThatKeepsStateAndContinuesIncompleteInput(@TempDir Path dir) throws Exception {
        Outcome o = crucible(dir, ("x = 41\nx + 1\ndef f():\n    return x * 2\n\nf()\n1 / 0\n"
                + "open('f.txt', 'w').write('from a cell')\n:! cat f.txt; echo; exit 3\n:! cd /nowhere-at-all\n:quit\n")
                .getBytes(StandardCharsets.UTF_8), "session", "--history", dir.resolve("history").toString());
        assertThat(o.exit()).as(o.stderr()).isZero();
        assertThat(o.stdout()).contains("42").contains("82").contains("ZeroDivisionError");
        assertThat(o.stdout()).contains("from a cell\n[exit 3]").contains("nowhere-at-all");
        assertThat(dir.resolve("history")).content().contains("x + 1");
        Outcome states = crucible(dir, ("y = 7\n:snapshot seven\n:snapshot ../bad\n:fork 2\n:pause\ny * 6\n"
                + ":commit local/x:1\n:quit\n").getBytes(StandardCharsets.UTF_8), "session", "--history",
                dir.resolve("history").toString());
        assertThat(states.exit()).as(states.stderr()).isZero();
        assertThat(states.stdout()).contains("(snapshot seven: ").contains("crucible: a snapshot needs a name")
                .containsPattern("\\(forks: [0-9a-f]{32} [0-9a-f]{32};").contains("(paused; a resume brings back: files)")
                .contains("crucible: session").contains("no image to commit over");
        Outcome bad = crucible(dir, new byte[0], "session", "--language", "cobol");
        assertOneLineError(bad, "unknown language");
        assertThat(bad.exit()).isEqualTo(ExitCodes.UNKNOWN_LANGUAGE);
    }

    @Test
    void sessionRunsBehindTheIsolationAskedFor(@TempDir Path dir) throws Exception {
        Outcome gvisor = crucible(dir, ":info\nprint(open('/proc/version').read(), end='')\n:quit\n"
                .getBytes(StandardCharsets.UTF_8), "session", "--isolation", "gvisor", "--history",
                dir.resolve("history").toString());
        assertThat(gvisor.exit()).as(gvisor.stderr()).isZero();
        assertThat(gvisor.stdout()).containsPattern("\\(session [0-9a-f]{32}: python behind gvisor, running\\)")
                .contains("Linux version").doesNotContain(Files.readString(Path.of("/proc/version")).strip());
        Outcome unknown = crucible(dir, new byte[0], "session", "--isolation", "firecracker");
        assertOneLineError(unknown, "isolation is \"namespaces\" or \"gvisor\"");
    }

    /**
     * {@code crucible session --shell} in a real terminal (a PTY this test holds, driven as a user types): the shell
     * keeps its state, Ctrl-C reaches the program in the sandbox and not the CLI, a window resize reaches the
     * sandbox's terminal, and the shell's exit ends the CLI.
     */
    @Test
    void sessionShellIsATerminalInTheSandbox(@TempDir Path dir) throws Exception {
        String driver = """
                import os, pty, select, struct, fcntl, termios, sys, time
                pid, fd = pty.fork()
                if pid == 0:
                    os.execv(sys.argv[1], sys.argv[1:])
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
                seen = b""
                def saw(text, seconds):
                    global seen
                    end = time.time() + seconds
                    while text.encode() not in seen:
                        left = end - time.time()
                        if left <= 0 or not select.select([fd], [], [], left)[0]:
                            return False
                        try:
                            seen += os.read(fd, 65536)
                        except OSError:
                            return False
                    return True
                def until(text, seconds=60):
                    if not saw(text, seconds):
                        sys.stdout.write(seen.decode(errors="replace")); sys.exit("never saw " + text)
                def type_(text):
                    os.write(fd, text.encode())
                type_("cd /tmp; X=6; stty size\\r")
                until("30 100")
                type_("echo $((X * 7))-$PWD\\r")
                until("42-/tmp")
                type_("sleep 600; echo after-$((1 + 1))\\r")
                time.sleep(1)
                type_("\\x03")
                type_("echo alive-$X\\r")
                until("alive-6")
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
                for attempt in range(30):  # the CLI's SIGWINCH, then its resize call: asked again until seen
                    type_("stty size\\r")
                    if saw("40 120", 2):
                        break
                until("40 120", 1)
                type_("exit 0\\r")
                until("[crucible: exit 0]")
                _, status = os.waitpid(pid, 0)
                sys.stdout.write(seen.decode(errors="replace"))
                sys.exit(os.waitstatus_to_exitcode(status))
                """;
        Outcome o = runPython(dir, driver, Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-jar", JAR.toAbsolutePath().toString(), "session", "--shell");
        assertThat(o.exit()).as(o.stdout() + o.stderr()).isZero();
        assertThat(o.stdout()).contains("42-/tmp", "alive-6", "40 120").doesNotContain("after-2");
    }

    private static Outcome runPython(Path dir, String script, String... args) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of("/usr/bin/python3", "-c", script));
        argv.addAll(List.of(args));
        Process p = new ProcessBuilder(argv).directory(dir.toFile()).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] errBytes = p.getErrorStream().readAllBytes();
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).isTrue();
        return new Outcome(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(errBytes,
                StandardCharsets.UTF_8));
    }
}
