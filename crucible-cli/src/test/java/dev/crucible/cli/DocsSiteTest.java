package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.crucible.cli.support.ExitCodes;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import tools.jackson.databind.json.JsonMapper;

/**
 * The documentation: {@code mkdocs build --strict} of {@code mkdocs.yml} passes (every page of {@code docs/} in the
 * nav, every link and anchor of the pages and of the README resolving: {@code scripts/mkdocs_checks.py}), and fails
 * on a copy broken each way it guards against; and what the pages say of the {@code crucible} command stays true:
 * every {@code ./crucible} command line of a shell block parses, and every exit code and environment variable of the
 * command is documented.
 */
class DocsSiteTest {
    static final Path REPO = Path.of("..").toAbsolutePath().normalize(); // surefire runs in crucible-cli
    static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void theSiteBuildsWithStrictChecks(@TempDir Path site) throws Exception {
        requireMkdocs();
        Result build = mkdocs(REPO, site);
        assertThat(build.exit()).as("mkdocs build --strict in %s:%n%s", REPO, build.output()).isZero();
        assertThat(site.resolve("index.html")).isRegularFile();
        assertThat(site.resolve("security/index.html")).isRegularFile();
    }

    static Stream<Arguments> breakages() {
        return Stream.of(
                Arguments.of("nothing broken (the copy builds as the checkout does)", null, (Consumer<Path>) copy -> {}),
                Arguments.of("a link to a page that does not exist", "no-such-page.md",
                        append("docs/api.md", "\nSee [the missing page](no-such-page.md).\n")),
                Arguments.of("an anchor no heading makes", "#no-such-heading",
                        append("docs/api.md", "\nSee [a section](sessions.md#no-such-heading).\n")),
                Arguments.of("a link to a source file outside docs/", "CrucibleCommand.java",
                        append("docs/cli.md", "\nSee [the command](../crucible-cli/src/main/java/CrucibleCommand.java).\n")),
                Arguments.of("a page missing from the nav", "docs/orphan.md is not listed",
                        write("docs/orphan.md", "# An orphan\n")),
                Arguments.of("a broken link of the README", "docs/no-such-page.md",
                        append("README.md", "\nSee [the missing page](docs/no-such-page.md).\n")));
    }

    /** The checks can fail: a copy of the site's sources, broken one way, fails the strict build and says where. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("breakages")
    void aBrokenCopyFailsTheStrictBuild(String what, String said, Consumer<Path> breakage, @TempDir Path dir)
            throws Exception {
        requireMkdocs();
        Path copy = dir.resolve("src");
        for (String path : List.of("mkdocs.yml", "README.md", "scripts/mkdocs_checks.py")) {
            Files.createDirectories(copy.resolve(path).getParent());
            Files.copy(REPO.resolve(path), copy.resolve(path));
        }
        try (Stream<Path> pages = Files.walk(REPO.resolve("docs"))) {
            for (Path page : pages.toList()) {
                Path to = copy.resolve(REPO.relativize(page).toString());
                if (Files.isDirectory(page)) {
                    Files.createDirectories(to);
                } else {
                    Files.copy(page, to);
                }
            }
        }
        breakage.accept(copy);
        Result build = mkdocs(copy, dir.resolve("site"));
        if (said == null) {
            assertThat(build.exit()).as("the unbroken copy (its README may link into docs/ only):%n%s", build.output())
                    .isZero();
        } else {
            assertThat(build.exit()).as("%s must fail the strict build:%n%s", what, build.output()).isNotZero();
            assertThat(build.output()).as("the failure names it").contains(said);
        }
    }

    /** Every {@code ./crucible …} line of a shell block in the README and the pages is a command line it takes. */
    @Test
    void everyCommandLineInTheDocsParses() throws IOException {
        List<String> parsed = new ArrayList<>();
        for (Path page : pages()) {
            for (String line : shellLines(Files.readString(page))) {
                Matcher m = Pattern.compile("\\./crucible\\s+(.*)").matcher(line);
                while (m.find()) {
                    List<String> words = words(m.group(1));
                    String where = REPO.relativize(page) + ": ./crucible " + String.join(" ", words);
                    assertThatCode(() -> new CommandLine(new CrucibleCommand()).parseArgs(words.toArray(String[]::new)))
                            .as(where).doesNotThrowAnyException();
                    parsed.add(where);
                }
            }
        }
        assertThat(parsed).as("the command lines found").hasSizeGreaterThan(25);
    }

    /** Every {@code curl} of a shell block in the README and the pages calls a route of the server's OpenAPI document. */
    @Test
    void everyCurlInTheDocsCallsARouteOfTheApi() throws IOException {
        Path openapi;
        try (Stream<Path> files = Files.walk(REPO.resolve("crucible-server/src/main/resources"))) {
            openapi = files.filter(f -> f.getFileName().toString().equals("openapi.json")).findFirst().orElseThrow();
        }
        Map<Pattern, Set<String>> routes = new LinkedHashMap<>();
        JSON.readTree(openapi.toFile()).get("paths").properties().forEach(route -> routes.put(
                Pattern.compile(Pattern.quote(route.getKey()).replace("{path}", "\\E.+\\Q").replaceAll("\\{\\w+}", "\\\\E[^/]+\\\\Q")),
                new TreeSet<>(route.getValue().propertyNames())));
        List<String> called = new ArrayList<>();
        for (Path page : pages()) {
            for (String line : shellLines(Files.readString(page))) {
                Matcher m = Pattern.compile("\\bcurl\\s+(.*)").matcher(line);
                while (m.find()) {
                    List<String> words = words(m.group(1));
                    String url = words.stream().filter(w -> w.contains(":8080/")).findFirst().orElseThrow(
                            () -> new AssertionError(REPO.relativize(page) + ": a curl without a URL: " + line));
                    String path = url.substring(url.indexOf(":8080/") + 5).replaceFirst("\\?.*", "");
                    int x = words.indexOf("-X");
                    String method = x >= 0 ? words.get(x + 1).toLowerCase(Locale.ROOT)
                            : words.stream().anyMatch(w -> w.equals("-d") || w.startsWith("--data")) ? "post" : "get";
                    String where = REPO.relativize(page) + ": " + method.toUpperCase(Locale.ROOT) + " " + path;
                    assertThat(routes.entrySet()).as(where + " is a route of " + REPO.relativize(openapi))
                            .anyMatch(r -> r.getKey().matcher(path).matches() && r.getValue().contains(method));
                    if (method.equals("post") && !COMPATIBLE.matcher(path).lookingAt()) {
                        assertThat(sendsJson(words)).as(where + " is sent with -H 'Content-Type: application/json'"
                                + " (without it the server answers 415)").isTrue();
                    }
                    called.add(where);
                }
            }
        }
        assertThat(called).as("the curls found").hasSizeGreaterThan(20);
    }

    /** The routes that take a POST without JSON from a client that is not a browser (Piston's client sends text). */
    private static final Pattern COMPATIBLE = Pattern.compile("/(api/v2/|run_code|replit/)");

    private static boolean sendsJson(List<String> words) {
        for (int i = 0; i + 1 < words.size(); i++) {
            if (words.get(i).equals("-H") && words.get(i + 1).toLowerCase(Locale.ROOT)
                    .matches("content-type:\\s*application/json.*")) {
                return true;
            }
        }
        return false;
    }

    /** Every exit code of the command is in a table of the docs, and every such table names only codes it has. */
    @Test
    void everyExitCodeIsDocumented() throws Exception {
        Set<Integer> codes = new TreeSet<>();
        for (Field f : ExitCodes.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
                f.setAccessible(true);
                codes.add(f.getInt(null));
            }
        }
        Set<Integer> documented = new TreeSet<>();
        for (Path page : pages()) {
            boolean inTable = false;
            for (String line : Files.readString(page).lines().toList()) {
                if (line.startsWith("| exit")) {
                    inTable = true;
                } else if (!line.startsWith("|")) {
                    inTable = false;
                } else if (inTable) {
                    Matcher m = Pattern.compile("^\\| (\\d+) \\|").matcher(line);
                    if (m.find()) {
                        int code = Integer.parseInt(m.group(1));
                        assertThat(code).as("%s: %s", REPO.relativize(page), line).isIn(union(codes, 0));
                        documented.add(code);
                    }
                }
            }
        }
        assertThat(documented).as("exit codes in the docs' tables").containsAll(codes);
    }

    /** Every {@code CRUCIBLE_*} variable the code, {@code ./crucible} or a client reads is on the page. */
    @Test
    void everyEnvironmentVariableIsDocumented() throws IOException {
        Set<String> names = new TreeSet<>();
        Pattern variable = Pattern.compile("CRUCIBLE_[A-Z0-9_]*[A-Z0-9]");
        List<Path> sources = new ArrayList<>(List.of(REPO.resolve("crucible")));
        for (String client : List.of("clients/python/src", "clients/typescript/src")) { // the clients read some too
            try (Stream<Path> files = Files.walk(REPO.resolve(client))) {
                sources.addAll(files.filter(f -> f.toString().endsWith(".py") || f.toString().endsWith(".ts")).toList());
            }
        }
        try (Stream<Path> modules = Files.list(REPO)) {
            for (Path main : modules.map(m -> m.resolve("src/main/java")).filter(Files::isDirectory).toList()) {
                try (Stream<Path> files = Files.walk(main)) {
                    sources.addAll(files.filter(f -> f.toString().endsWith(".java")).toList());
                }
            }
        }
        for (Path source : sources) {
            Matcher m = variable.matcher(Files.readString(source));
            while (m.find()) {
                names.add(m.group());
            }
        }
        String configuration = Files.readString(REPO.resolve("docs/configuration.md"));
        assertThat(names).as("the variables found").contains("CRUCIBLE_TOKENS", "CRUCIBLE_AOT", "CRUCIBLE_URL");
        assertThat(names.stream().filter(name -> !Pattern.compile("`" + name + "[`=]").matcher(configuration).find()))
                .as("variables missing from docs/configuration.md, Environment variables").isEmpty();
    }

    private static Set<Integer> union(Set<Integer> codes, int more) {
        Set<Integer> all = new TreeSet<>(codes);
        all.add(more);
        return all;
    }

    private static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(REPO.resolve("README.md")));
        try (Stream<Path> docs = Files.list(REPO.resolve("docs"))) {
            pages.addAll(docs.filter(p -> p.toString().endsWith(".md")).sorted().toList());
        }
        return pages;
    }

    /** The lines of the {@code sh} blocks, a line ending in a backslash joined with the next. */
    static List<String> shellLines(String markdown) {
        List<String> lines = new ArrayList<>();
        boolean inShell = false;
        StringBuilder joined = new StringBuilder();
        for (String line : markdown.lines().toList()) {
            if (line.startsWith("```")) {
                inShell = !inShell && line.equals("```sh");
                continue;
            }
            if (!inShell) {
                continue;
            }
            if (line.endsWith("\\")) {
                joined.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            lines.add(joined.append(line).toString());
            joined.setLength(0);
        }
        return lines;
    }

    /**
     * The words of one command as the shell splits them, up to a comment or the next command ({@code |}, {@code ;},
     * {@code &}); a variable stands for {@code 0}, which every option that might take one accepts.
     */
    static List<String> words(String command) {
        List<String> words = new ArrayList<>();
        StringBuilder word = null;
        char quote = 0;
        for (int i = 0; i < command.length(); i++) {
            char c = command.charAt(i);
            if (c == '$' && quote != '\'') { // expanded outside quotes and inside double quotes
                word = word == null ? new StringBuilder() : word;
                word.append('0');
                while (i + 1 < command.length() && (Character.isLetterOrDigit(command.charAt(i + 1)) || command.charAt(i + 1) == '_')) {
                    i++;
                }
            } else if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                word = word == null ? new StringBuilder() : word;
            } else if (c == '\\' && i + 1 < command.length()) {
                word = word == null ? new StringBuilder() : word;
                word.append(command.charAt(++i));
            } else if (Character.isWhitespace(c) || c == '|' || c == ';' || c == '&' || (c == '#' && word == null)) {
                if (word != null) {
                    words.add(word.toString());
                    word = null;
                }
                if (!Character.isWhitespace(c)) {
                    break;
                }
            } else {
                word = word == null ? new StringBuilder() : word;
                word.append(c);
            }
        }
        if (word != null) {
            words.add(word.toString());
        }
        return words;
    }

    private static Consumer<Path> append(String file, String text) {
        return copy -> {
            try {
                Files.writeString(copy.resolve(file), Files.readString(copy.resolve(file)) + text);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }

    private static Consumer<Path> write(String file, String text) {
        return copy -> {
            try {
                Files.writeString(copy.resolve(file), text);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }

    private static void requireMkdocs() {
        Capability.MKDOCS.require();
    }

    record Result(int exit, String output) {}

    /** {@code mkdocs build --strict} of the sources in {@code dir} into {@code site}: its exit code and its output. */
    static Result mkdocs(Path dir, Path site) throws Exception {
        ProcessBuilder builder = new ProcessBuilder("mkdocs", "build", "--strict", "--site-dir", site.toString())
                .directory(dir.toFile()).redirectErrorStream(true);
        builder.environment().put("PYTHONDONTWRITEBYTECODE", "1"); // no __pycache__ beside the hooks
        Process p = builder.start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()),
                task -> Thread.ofPlatform().daemon().start(task)); // a pipe: a platform thread
        if (!p.waitFor(2, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError("mkdocs build did not finish in 2 minutes: " + output.getNow(""));
        }
        return new Result(p.exitValue(), output.get());
    }

    private static String readAll(InputStream in) {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
