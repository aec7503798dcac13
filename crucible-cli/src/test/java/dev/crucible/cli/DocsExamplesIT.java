package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What the docs show is what happens: every shell block of {@code README.md} and {@code docs/*.md} marked
 * {@code <!-- example -->} (the line before its fence) runs, in page order in one shell, against a real server started
 * from the JAR, as a newcomer would copy it. {@code localhost:8080} is that server, {@code ./crucible} the JAR. A
 * whole-line comment right after a command is the output the page shows: each such line must match a line the block
 * printed, in order, where {@code ...} stands for anything and a number of milliseconds, bytes or a pid for any number
 * (an {@code echo} after the command ends its output's line, as a terminal shows it above the next prompt).
 * A block that fails (the shell's {@code -e}) fails the page. {@code -Ddocs.page=sessions.md} runs one page's.
 */
class DocsExamplesIT {
    static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    static final String MARK = "<!-- example -->";

    /** One marked block: where it is, its commands, and the output lines it shows. */
    record Example(Path page, int line, String script, List<String> shown) {
        String where() {
            return REPO.relativize(page) + ":" + line;
        }
    }

    static Stream<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(REPO.resolve("README.md")));
        try (Stream<Path> docs = Files.list(REPO.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        String only = System.getProperty("docs.page", "");
        return pages.stream().filter(p -> only.isEmpty() || p.getFileName().toString().equals(only)).filter(p -> {
            try {
                return !examples(p).isEmpty();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** The marked blocks of {@code page}, in order. */
    static List<Example> examples(Path page) throws IOException {
        List<String> lines = Files.readAllLines(page);
        List<Example> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (!lines.get(i).strip().equals(MARK)) {
                continue;
            }
            assertThat(lines.get(i + 1)).as(page + ":" + (i + 2) + " follows " + MARK).matches("```(sh|bash|console)");
            StringBuilder script = new StringBuilder();
            List<String> shown = new ArrayList<>();
            boolean afterCommand = false;
            int shownAfter = -1;
            int j = i + 2;
            for (; !lines.get(j).startsWith("```"); j++) {
                String line = lines.get(j);
                if (line.startsWith("# ") && afterCommand) {
                    if (shownAfter != script.length()) { // the output a page shows is a line of its own
                        script.append("echo\n");
                        shownAfter = script.length();
                    }
                    shown.add(line.substring(2));
                } else {
                    script.append(line).append('\n');
                    afterCommand = !line.isBlank() && !line.startsWith("#");
                }
            }
            out.add(new Example(page, i + 2, script.toString(), shown));
            i = j;
        }
        return out;
    }

    /**
     * A shown line as a pattern: {@code ...} is anything, and the number of a field of milliseconds ({@code *_ms}),
     * bytes ({@code *bytes}: {@code "bytes"}, {@code "memory_bytes"}) or a pid any number.
     */
    static Pattern shownPattern(String shown) {
        StringBuilder regex = new StringBuilder();
        Matcher m = Pattern.compile("\\.\\.\\.|…|(?<=(_ms|bytes|\"pid)\":)\\d+").matcher(shown);
        int at = 0;
        while (m.find()) {
            regex.append(Pattern.quote(shown.substring(at, m.start())));
            regex.append(m.group().equals("...") || m.group().equals("…") ? ".*" : "\\d+");
            at = m.end();
        }
        regex.append(Pattern.quote(shown.substring(at))).append('$');
        return Pattern.compile(regex.toString());
    }

    @Test
    void theExampleMatcherTellsAShownOutputFromAnother() {
        Pattern p = shownPattern("{\"status\":\"ok\",\"stdout\":\"42\\n\",...,\"wall_ms\":4,...}");
        assertThat(p.matcher("{\"status\":\"ok\",\"stdout\":\"42\\n\",\"x\":1,\"wall_ms\":17,\"cpu_ms\":3}").find())
                .isTrue();
        assertThat(p.matcher("{\"status\":\"ok\",\"stdout\":\"43\\n\",\"x\":1,\"wall_ms\":17}").find()).isFalse();
        assertThat(p.matcher("{\"status\":\"ok\",\"stdout\":\"42\\n\",\"wall_ms\":1} and more").find()).isFalse();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("pages")
    void everyMarkedExampleOfThePageRunsAndPrintsWhatThePageShows(Path page, @TempDir Path dir, @TempDir Path data)
            throws Exception {
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxr-xr-x"));
        ServeIT.Served server = ServeIT.serve(data, "--pool", "python=0,javascript=0");
        try {
            Path crucible = dir.resolve("crucible");
            Files.writeString(crucible, "#!/bin/sh\nexec '" + Path.of(System.getProperty("java.home"), "bin", "java")
                    + "' --enable-native-access=ALL-UNNAMED -jar '" + CliIT.JAR.toAbsolutePath() + "' \"$@\"\n");
            Files.setPosixFilePermissions(crucible, PosixFilePermissions.fromString("rwxr-xr-x"));
            List<Example> examples = examples(page);
            StringBuilder script = new StringBuilder("set -euo pipefail\n");
            for (int i = 0; i < examples.size(); i++) {
                script.append("echo '@@example ").append(i).append("@@'\n")
                        .append(examples.get(i).script().replace("localhost:8080", "127.0.0.1:" + server.port())
                                .replace("127.0.0.1:8080", "127.0.0.1:" + server.port()))
                        .append("echo\n");
            }
            ProcessBuilder bash = new ProcessBuilder("bash", "-c", script.toString()).directory(dir.toFile())
                    .redirectErrorStream(true);
            bash.environment().put("CRUCIBLE_URL", "http://127.0.0.1:" + server.port());
            Process p = bash.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
            String[] parts = out.split("@@example \\d+@@\n", -1);
            if (p.exitValue() != 0) { // the shell stopped in the last block it began
                Example failed = examples.get(parts.length - 2);
                throw new AssertionError(failed.where() + " failed (exit " + p.exitValue() + "); it printed\n"
                        + parts[parts.length - 1] + "\nits commands, as run:\n" + failed.script());
            }
            for (int i = 0; i < examples.size(); i++) {
                Example e = examples.get(i);
                assertThat(parts.length).as(e.where() + " ran (the shell stopped before it):\n" + out)
                        .isGreaterThan(i + 1);
                List<String> printed = parts[i + 1].lines().toList();
                int from = 0;
                for (String shown : e.shown()) {
                    Pattern pattern = shownPattern(shown);
                    int found = -1;
                    for (int k = from; k < printed.size() && found < 0; k++) {
                        if (pattern.matcher(printed.get(k)).find()) { // the end of a line: an earlier command's
                            // output without a newline of its own (curl -s) may begin it, as in a terminal
                            found = k;
                        }
                    }
                    assertThat(found).as(e.where() + " shows\n  " + shown + "\nbut printed\n" + parts[i + 1])
                            .isGreaterThanOrEqualTo(0);
                    from = found + 1;
                }
            }
        } finally {
            server.stop(Duration.ofSeconds(30));
        }
    }
}
