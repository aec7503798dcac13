package dev.crucible.image.build;

import dev.crucible.image.spec.ImageFormats;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;

/**
 * The Dockerfile subset {@code crucible image build -f} builds, read into {@link BuildStep}s: one stage ({@code FROM}
 * an image of the store, {@code AS} allowed), {@code RUN} (shell and exec form, heredocs), {@code COPY} and {@code ADD}
 * of files of the context ({@code --chmod} kept, {@code --chown} accepted and left out, since a Crucible image's files
 * all belong to its root), {@code ENV}, {@code ARG} (with build arguments), {@code WORKDIR}, {@code USER},
 * {@code CMD}, {@code ENTRYPOINT}, {@code EXPOSE}, {@code LABEL}, {@code MAINTAINER}; line continuations and comments;
 * {@code $VAR}, {@code ${VAR}}, {@code ${VAR:-word}} and {@code ${VAR:+word}} in the instructions Docker expands them
 * in (not {@code RUN}: its shell does). Anything else (a second {@code FROM}, {@code COPY --from}, {@code RUN --mount},
 * {@code ADD} of a URL or an archive, {@code SHELL}, {@code VOLUME}, {@code HEALTHCHECK}, {@code ONBUILD},
 * {@code STOPSIGNAL}) is an {@link Invalid} naming the line, never a silent difference.
 * Stateless.
 */
public final class Dockerfile {
    private static final Pattern HEREDOC = Pattern.compile("<<(-?)(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\\2");
    private static final Pattern PORT = Pattern.compile("[0-9]{1,5}(-[0-9]{1,5})?(/(tcp|udp|sctp))?");
    private static final Set<String> ARCHIVES = Set.of(".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2",
            ".tbz2", ".tar.zst");
    private static final Set<String> UNSUPPORTED = Set.of("SHELL", "VOLUME", "HEALTHCHECK", "ONBUILD", "STOPSIGNAL");

    private Dockerfile() {}

    /**
     * What a Dockerfile builds.
     *
     * @param from the base image's reference, as {@code FROM} names it (variables expanded)
     * @param steps the instructions after it, in order
     */
    public record Parsed(String from, List<BuildStep> steps) {
        public Parsed {
            steps = List.copyOf(steps);
        }
    }

    /**
     * Reads {@code text}.
     *
     * @param buildArgs values for its {@code ARG}s ({@code --build-arg NAME=VALUE})
     * @throws Invalid naming the line of an instruction outside the subset or malformed
     */
    public static Parsed parse(String text, Map<String, String> buildArgs) {
        return new Reader(text, buildArgs).read();
    }

    /** One logical line: where it starts, its instruction word (upper case) and the rest. */
    private record Line(int number, String instruction, String rest) {}

    private static final class Reader {
        private final List<String> lines;
        private final Map<String, String> buildArgs;
        private final Map<String, String> globalArgs = new LinkedHashMap<>();
        private final Map<String, String> vars = new LinkedHashMap<>();
        private final List<BuildStep> steps = new ArrayList<>();
        private String from;
        private int next;

        Reader(String text, Map<String, String> buildArgs) {
            this.lines = text.lines().toList();
            this.buildArgs = Map.copyOf(buildArgs);
        }

        Parsed read() {
            for (Line line = nextLine(); line != null; line = nextLine()) {
                instruction(line);
            }
            if (from == null) {
                throw invalid(0, "no FROM: a Dockerfile starts with FROM IMAGE (after ARGs)");
            }
            return new Parsed(from, steps);
        }

        private Line nextLine() {
            StringBuilder logical = new StringBuilder();
            int start = -1;
            while (next < lines.size()) {
                String raw = lines.get(next++);
                String stripped = raw.strip();
                if (stripped.startsWith("#") || (stripped.isEmpty() && start < 0)) {
                    if (start < 0 && stripped.toLowerCase(Locale.ROOT).replace(" ", "").startsWith("#escape=")
                            && !stripped.endsWith("\\")) {
                        throw invalid(next, "the escape directive is not supported; use the default escape \\");
                    }
                    continue;
                }
                if (start < 0) {
                    start = next;
                }
                if (stripped.endsWith("\\")) {
                    logical.append(stripped, 0, stripped.length() - 1).append(' ');
                    continue;
                }
                logical.append(stripped);
                break;
            }
            if (start < 0) {
                return null;
            }
            String text = logical.toString().strip();
            int space = indexOfSpace(text);
            String word = (space < 0 ? text : text.substring(0, space)).toUpperCase(Locale.ROOT);
            return new Line(start, word, space < 0 ? "" : text.substring(space).strip());
        }

        private void instruction(Line line) {
            int n = line.number();
            String rest = line.rest();
            if (from == null && !line.instruction().equals("FROM") && !line.instruction().equals("ARG")) {
                throw invalid(n, line.instruction() + " before FROM: only ARG may come before FROM");
            }
            if (UNSUPPORTED.contains(line.instruction())) {
                throw invalid(n, line.instruction() + " is not supported by crucible image build; remove it");
            }
            switch (line.instruction()) {
                case "FROM" -> from(n, rest);
                case "ARG" -> arg(n, rest);
                case "RUN" -> run(n, rest);
                case "COPY", "ADD" -> copy(n, line.instruction(), rest);
                case "ENV" -> pairs(n, "ENV", rest).forEach((k, v) -> {
                    steps.add(new BuildStep.Env(k, v));
                    vars.put(k, v);
                });
                case "LABEL" -> pairs(n, "LABEL", rest).forEach((k, v) -> steps.add(new BuildStep.Label(k, v)));
                case "MAINTAINER" -> steps.add(new BuildStep.Label("maintainer", rest));
                case "WORKDIR" -> steps.add(new BuildStep.Workdir(required(n, "WORKDIR", expand(rest))));
                case "USER" -> steps.add(new BuildStep.User(required(n, "USER", expand(rest))));
                case "CMD" -> steps.add(new BuildStep.Cmd(command(n, rest)));
                case "ENTRYPOINT" -> steps.add(new BuildStep.Entrypoint(command(n, rest)));
                case "EXPOSE" -> {
                    for (String port : DockerfileWords.words(expand(rest))) {
                        if (!PORT.matcher(port).matches()) {
                            throw invalid(n, "EXPOSE " + port + ": a port is NUMBER[/tcp|/udp]");
                        }
                        steps.add(new BuildStep.Expose(port));
                    }
                }
                default -> throw invalid(n, "unknown instruction " + line.instruction());
            }
        }

        private void from(int n, String rest) {
            if (from != null) {
                throw invalid(n, "a second FROM: multi-stage builds are not supported; build each stage as an image"
                        + " of its own and COPY from a context instead");
            }
            List<String> words = DockerfileWords.words(rest);
            if (!words.isEmpty() && words.getFirst().startsWith("--")) {
                throw invalid(n, "FROM " + words.getFirst() + " is not supported; the image's own platform is used");
            }
            if (words.size() != 1 && !(words.size() == 3 && words.get(1).equalsIgnoreCase("AS"))) {
                throw invalid(n, "FROM takes IMAGE [AS NAME], got '" + rest + "'");
            }
            vars.putAll(globalArgs);
            from = expand(words.getFirst());
            vars.clear(); // global ARGs reach FROM only, unless declared again
            if (from.equals("scratch")) {
                throw invalid(n, "FROM scratch is not supported: steps run under /bin/sh of the base image");
            }
        }

        private void arg(int n, String rest) {
            for (String word : DockerfileWords.words(rest)) {
                int eq = word.indexOf('=');
                String name = eq < 0 ? word : word.substring(0, eq);
                if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                    throw invalid(n, "ARG " + word + ": a name is letters, digits and _");
                }
                String value = buildArgs.containsKey(name) ? buildArgs.get(name)
                        : eq >= 0 ? DockerfileWords.unquote(expand(word.substring(eq + 1))) : globalArgs.get(name);
                if (from == null) {
                    globalArgs.put(name, value == null ? "" : value);
                } else if (value != null) {
                    vars.put(name, value);
                    steps.add(new BuildStep.Arg(name, value));
                }
            }
        }

        private void run(int n, String rest) {
            if (rest.startsWith("--")) {
                throw invalid(n, "RUN " + rest.split("\\s", 2)[0] + " is not supported (no mounts or network modes);"
                        + " a step's network is the build's --egress-allow");
            }
            Matcher heredoc = HEREDOC.matcher(rest);
            if (heredoc.find()) {
                String body = heredoc(n, heredoc.group(3), !heredoc.group(1).isEmpty());
                String before = rest.substring(0, heredoc.start()).strip();
                if (before.isEmpty() && rest.substring(heredoc.end()).isBlank()) {
                    steps.add(BuildStep.Run.shell(body));
                } else {
                    steps.add(BuildStep.Run.shell(rest + "\n" + body + heredoc.group(3)));
                }
                return;
            }
            List<String> exec = exec(rest);
            if (exec != null) {
                if (exec.isEmpty()) {
                    throw invalid(n, "RUN [] needs a command");
                }
                steps.add(new BuildStep.Run(exec));
            } else {
                steps.add(BuildStep.Run.shell(required(n, "RUN", rest)));
            }
        }

        /** The heredoc's lines up to its terminator (leading tabs dropped for {@code <<-}), each ending in a newline. */
        private String heredoc(int n, String terminator, boolean stripTabs) {
            StringBuilder body = new StringBuilder();
            while (next < lines.size()) {
                String raw = lines.get(next++);
                String line = stripTabs ? raw.replaceFirst("^\t+", "") : raw;
                if (line.equals(terminator)) {
                    return body.toString();
                }
                body.append(line).append('\n');
            }
            throw invalid(n, "the heredoc <<" + terminator + " has no line '" + terminator + "' ending it");
        }

        private void copy(int n, String instruction, String rest) {
            Integer mode = null;
            List<String> args = new ArrayList<>(DockerfileWords.words(rest));
            while (!args.isEmpty() && args.getFirst().startsWith("--")) {
                String flag = args.removeFirst();
                if (flag.startsWith("--chmod=")) {
                    String value = flag.substring("--chmod=".length());
                    if (!value.matches("[0-7]{3,4}")) {
                        throw invalid(n, instruction + " " + flag + ": give the mode in octal, such as --chmod=755");
                    }
                    mode = Integer.parseInt(value, 8) & 0777;
                } else if (!flag.startsWith("--chown=") && !flag.equals("--link")) {
                    throw invalid(n, instruction + " " + flag + " is not supported"
                            + (flag.startsWith("--from") ? " (no multi-stage builds): copy from the context" : ""));
                }
            }
            String joined = String.join(" ", args);
            List<String> json = joined.startsWith("[") ? exec(joined) : null;
            List<String> paths = (json != null ? json : args).stream().map(this::expand).toList();
            if (paths.size() < 2) {
                throw invalid(n, instruction + " takes SOURCE... DESTINATION");
            }
            List<String> sources = paths.subList(0, paths.size() - 1);
            if (rest.contains("<<")) {
                throw invalid(n, instruction + " with a heredoc is not supported; write the file in the context");
            }
            for (String source : sources) {
                if (source.contains("://") || source.startsWith("git@")) {
                    throw invalid(n, instruction + " " + source + ": a URL is not fetched by a build; download it"
                            + " in a RUN step with the build's --egress-allow");
                }
                if (instruction.equals("ADD") && ARCHIVES.stream().anyMatch(source.toLowerCase(Locale.ROOT)::endsWith)) {
                    throw invalid(n, "ADD " + source + ": archives are not unpacked by a build; COPY it and"
                            + " RUN tar -x");
                }
            }
            steps.add(new BuildStep.Copy(sources, paths.getLast(), mode));
        }

        /** {@code ["a", "b"]} read as JSON, or null when the text is not a JSON array of strings (the shell form). */
        private static List<String> exec(String rest) {
            if (!rest.startsWith("[")) {
                return null;
            }
            try {
                JsonNode node = ImageFormats.JSON.readTree(rest);
                if (!node.isArray()) {
                    return null;
                }
                List<String> argv = new ArrayList<>();
                for (JsonNode e : node) {
                    if (!e.isString()) {
                        return null;
                    }
                    argv.add(e.asString());
                }
                return argv;
            } catch (RuntimeException e) {
                return null;
            }
        }

        private List<String> command(int n, String rest) {
            List<String> exec = exec(rest);
            return exec != null ? exec : List.of("/bin/sh", "-c", required(n, "the command", rest));
        }

        /** {@code KEY=VALUE ...} (quotes and escapes as a shell reads them), or the old {@code KEY VALUE}. */
        private Map<String, String> pairs(int n, String instruction, String rest) {
            Map<String, String> pairs = new LinkedHashMap<>();
            List<String> words = DockerfileWords.words(rest);
            if (!words.isEmpty() && !words.getFirst().contains("=")) {
                int space = indexOfSpace(rest);
                if (space < 0) {
                    throw invalid(n, instruction + " takes KEY=VALUE");
                }
                pairs.put(words.getFirst(), expand(rest.substring(space).strip()));
                return pairs;
            }
            for (String word : words) {
                int eq = word.indexOf('=');
                if (eq <= 0) {
                    throw invalid(n, instruction + " " + word + ": give KEY=VALUE");
                }
                String key = DockerfileWords.unquote(word.substring(0, eq));
                String value = DockerfileWords.unquote(expand(word.substring(eq + 1)));
                pairs.put(key, value);
                if (instruction.equals("ENV")) {
                    vars.put(key, value); // ENV A=1 B=$A sees A
                }
            }
            return pairs;
        }

        private String expand(String text) {
            return DockerfileWords.expand(text, vars);
        }

        private static String required(int n, String what, String value) {
            if (value.isBlank()) {
                throw invalid(n, what + " needs an argument");
            }
            return value;
        }

        static int indexOfSpace(String text) {
            for (int i = 0; i < text.length(); i++) {
                if (Character.isWhitespace(text.charAt(i))) {
                    return i;
                }
            }
            return -1;
        }
    }

    /** A Dockerfile outside the subset, or malformed; the message names the line and says what to do. */
    public static final class Invalid extends IllegalArgumentException {
        private final int line;

        Invalid(int line, String message) {
            super((line > 0 ? "Dockerfile line " + line + ": " : "Dockerfile: ") + message);
            this.line = line;
        }

        /** The line (from 1) where the instruction starts, or 0 for the file as a whole. */
        public int line() {
            return line;
        }
    }

    private static Invalid invalid(int line, String message) {
        return new Invalid(line, message);
    }
}
