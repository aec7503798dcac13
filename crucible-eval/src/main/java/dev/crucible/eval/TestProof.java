package dev.crucible.eval;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.ExecuteResult;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Proof that a program's test code ran to its end. Exit status 0 is no proof: a completion can leave with status 0
 * before the tests run ({@code sys.exit(0)}, {@code os._exit(0)}, {@code process.exit(0)}, {@code exit(0)} in C, an
 * atexit hook, …). So the program is sealed: after its last line (or, for C, C++ and Java, after its {@code main}
 * returns) it writes a marker holding a fresh 128-bit random nonce to its stdout, and a run passes only when it
 * exited 0 <em>and</em> that marker is in its output. Nothing the sample printed or wrote before this run can forge
 * the marker, because the nonce did not exist before the run. A sample that reads its own program text or the
 * harness's memory while it runs can find the nonce (the tests run in its process, as in human-eval): that is a
 * deliberate attack on the harness, not a way out of it, and docs/evaluation.md and docs/security.md say so.
 *
 * <p>The marker (and the line break written before it) is removed from the output that is compared or returned.
 * Immutable and thread-safe; one instance per run. Public for the judges above the judge of one program (a dataset's
 * samples, Codex Runner's tests): whatever judges test code seals it with a fresh proof and judges its run by it.
 */
public final class TestProof {
    /** The languages whose test code can be sealed (canonical runtime names). */
    static final List<String> LANGUAGES = List.of("python", "javascript", "bash", "c", "cpp", "java");

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Pattern C_MAIN = Pattern.compile("\\bint\\s+main\\s*\\(([^)]*)\\)");
    private static final Pattern JAVA_MAIN = Pattern.compile(
            "\\bpublic\\s+static\\s+void\\s+main\\s*\\(\\s*(?:final\\s+)?String\\s*(?:\\[\\s*]|\\.\\.\\.)\\s*(\\w+)\\s*\\)"
                    + "|\\bpublic\\s+static\\s+void\\s+main\\s*\\(\\s*(?:final\\s+)?String\\s+(\\w+)\\s*\\[\\s*]\\s*\\)");

    private final String marker;

    private TestProof(String marker) {
        this.marker = marker;
    }

    /** A proof with a fresh nonce. */
    public static TestProof fresh() {
        byte[] nonce = new byte[16];
        RANDOM.nextBytes(nonce);
        return new TestProof("crucible-tests-done-" + HexFormat.of().formatHex(nonce));
    }

    static boolean supports(String language) {
        return LANGUAGES.contains(language);
    }

    /**
     * The program with the epilogue that writes the marker once the test code (the end of {@code program}) ran.
     *
     * @param language a canonical runtime name
     * @throws RequestException for a language whose test code cannot be sealed, or a C/C++/Java program
     *     without a {@code main} to wrap
     */
    public String seal(String language, String program) {
        String line = "\\n" + marker + "\\n";
        return switch (language) {
            case "python" -> program + "\n\nimport os as _crucible_os, sys as _crucible_sys\n"
                    + "for _crucible_s in (_crucible_sys.stdout, _crucible_sys.__stdout__):\n"
                    + "    try:\n        _crucible_s.flush()\n    except BaseException:\n        pass\n"
                    + "_crucible_os.write(1, b\"" + line + "\")\n";
            // a failure the tests record without throwing (exitCode) writes no marker: an exit hook cannot turn it to 0
            case "javascript" -> program + "\n;if (!process.exitCode) require('fs').writeSync(1, \"" + line + "\");\n";
            // a shell's status is its last command's: the tests' status decides, and the marker only follows success
            case "bash" -> program + "\ncrucible_status=$?\nif [ \"$crucible_status\" -eq 0 ]; then builtin printf '"
                    + line + "'; fi\nexit \"$crucible_status\"\n";
            case "c", "cpp" -> sealC(program, line);
            case "java" -> sealJava(program, line);
            default -> throw new RequestException(ErrorCode.INVALID_REQUEST, "test code in " + language + " cannot be"
                    + " checked to have run to its end (exit status alone is no proof); test code is supported for "
                    + String.join(", ", LANGUAGES) + ", and any language can be judged by stdin and expected output");
        };
    }

    private String sealC(String program, String line) {
        Matcher m = last(C_MAIN, program);
        if (m == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "the program and its test code define no"
                    + " `int main(...)`: the tests' main is what Crucible wraps to know they ran to the end");
        }
        String params = m.group(1).strip();
        boolean args = !(params.isEmpty() || params.equals("void"));
        int close = closingBrace(program, m.end());
        if (close < 0) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "the tests' `int main(...)` has no body Crucible can"
                    + " find the end of (unbalanced braces)");
        }
        // main alone may end without a return (it returns 0); the renamed function must say so
        return program.substring(0, m.start()) + "int crucible_tests_main(" + m.group(1) + ")"
                + program.substring(m.end(), close) + "\nreturn 0;\n" + program.substring(close)
                + "\n#include <stdio.h>\n#include <unistd.h>\n"
                + "int main(int crucible_argc, char **crucible_argv) {\n"
                + "    (void) crucible_argc; (void) crucible_argv;\n"
                + "    int crucible_status = crucible_tests_main(" + (args ? "crucible_argc, crucible_argv" : "") + ");\n"
                + "    fflush(stdout);\n"
                + "    static const char crucible_marker[] = \"" + line + "\";\n"
                // only after success: an atexit hook could turn a failing status into 0, never write the marker
                + "    if (crucible_status == 0 && write(1, crucible_marker, sizeof crucible_marker - 1) < 0) return 1;\n"
                + "    return crucible_status;\n}\n";
    }

    /**
     * The index of the brace that closes the body opening after {@code from}, skipping comments, string and character
     * literals; -1 when there is none.
     */
    static int closingBrace(String code, int from) {
        int depth = 0;
        for (int i = from; i < code.length(); i++) {
            char c = code.charAt(i);
            if (c == '/' && i + 1 < code.length() && code.charAt(i + 1) == '/') {
                i = Math.max(i, code.indexOf('\n', i) < 0 ? code.length() : code.indexOf('\n', i));
            } else if (c == '/' && i + 1 < code.length() && code.charAt(i + 1) == '*') {
                int end = code.indexOf("*/", i + 2);
                i = end < 0 ? code.length() : end + 1;
            } else if (c == '"' || c == '\'') {
                for (i++; i < code.length() && code.charAt(i) != c; i++) {
                    if (code.charAt(i) == '\\') {
                        i++;
                    }
                }
            } else if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                return i;
            } else if (c == ';' && depth == 0) {
                return -1; // a declaration, not a definition
            }
        }
        return -1;
    }

    private String sealJava(String program, String line) {
        Matcher m = last(JAVA_MAIN, program);
        if (m == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "the program and its test code define no"
                    + " `public static void main(String[] args)`: the tests' main is what Crucible wraps to know they"
                    + " ran to the end");
        }
        String name = m.group(1) != null ? m.group(1) : m.group(2);
        return program.substring(0, m.start())
                + "public static void main(String[] crucibleArgs) throws Throwable {\n"
                + "        crucibleTestsMain(crucibleArgs);\n"
                + "        System.out.flush();\n"
                + "        java.io.FileOutputStream crucibleOut = new java.io.FileOutputStream(java.io.FileDescriptor.out);\n"
                + "        crucibleOut.write(\"" + line + "\".getBytes(java.nio.charset.StandardCharsets.UTF_8));\n"
                + "        crucibleOut.flush();\n"
                + "    }\n"
                + "    public static void crucibleTestsMain(String[] " + name + ")"
                + program.substring(m.end());
    }

    private static Matcher last(Pattern pattern, String text) {
        Matcher m = pattern.matcher(text);
        int start = -1;
        while (m.find()) {
            start = m.start();
        }
        if (start < 0) {
            return null;
        }
        Matcher found = pattern.matcher(text);
        found.find(start);
        return found;
    }

    /** Whether the marker is in the output (the head, or the tail kept after a cut). */
    public boolean proven(ExecuteResult r) {
        return r.stdout() != null && r.stdout().contains(marker);
    }

    /**
     * The result as the program's own: the marker line removed from stdout; a run that exited 0 without the marker
     * is not {@code ok} for judging purposes (see {@link #judged}).
     */
    public ExecuteResult strip(ExecuteResult r) {
        if (r.stdout() == null) {
            return r;
        }
        int at = r.stdout().lastIndexOf(marker);
        if (at < 0) {
            return r;
        }
        int from = at > 0 && r.stdout().charAt(at - 1) == '\n' ? at - 1 : at;
        int to = Math.min(r.stdout().length(), at + marker.length() + 1);
        String stdout = r.stdout().substring(0, from) + r.stdout().substring(to);
        return new ExecuteResult(r.status(), r.exitCode(), r.signal(), stdout, r.stderr(), r.stdoutTruncated(),
                r.stderrTruncated(), r.wallMs(), r.cpuMs(), r.memoryBytes(), r.compile(), r.message(), r.imageDigest(),
                r.network(), r.isolation());
    }

    /** What a sealed run shows: its result without the marker, and whether its tests ran to the end and passed. */
    public record Judged(ExecuteResult result, boolean passed, String reason) {}

    /** The verdict of a sealed run: passed only when it exited 0 and wrote the marker. */
    public Judged judged(ExecuteResult r) {
        ExecuteResult shown = strip(r);
        if (!r.ok()) {
            return new Judged(shown, false, null);
        }
        if (!proven(r)) {
            return new Judged(shown, false, INCOMPLETE);
        }
        return new Judged(shown, true, null);
    }

    /** Why a run that exited 0 without the marker fails. */
    public static final String INCOMPLETE = "the test code did not run to its end: the program exited with status 0 before"
            + " its tests finished (sys.exit, os._exit, process.exit, exit() or an atexit hook)";
}
