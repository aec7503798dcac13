package dev.crucible.runtime;

import dev.crucible.sandbox.Limits;
import dev.crucible.util.Once;
import dev.crucible.util.UserCache;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.dataformat.toml.TomlMapper;

/**
 * The runtimes Crucible knows, from the built-in {@code runtimes.toml} and an optional user file that adds runtimes
 * or replaces one by its {@code language}. Immutable and thread-safe once loaded.
 *
 * <p>Each command's executable is resolved once, in {@code /usr/local/bin} and {@code /usr/bin} of the host or of
 * the runtime's rootfs, and must resolve inside {@code /usr} so that the sandbox sees it; a runtime whose tools
 * are missing is kept, marked unavailable with the reason.
 */
public final class RuntimeRegistry {
    private static final List<String> SEARCH = List.of("/usr/local/bin", "/usr/bin");
    private static final Pattern VERSION = Pattern.compile("\\d+(\\.\\d+)+");
    /** Thread-safe once built; shared by the built-in file and every user file. */
    private static final Once<TomlMapper> TOML = new Once<>(() -> TomlMapper.builder().build());
    /** The built-in definitions, parsed once per process (records: immutable). */
    private static final Once<List<RuntimeDefinition>> BUILT_IN = new Once<>(RuntimeRegistry::parseBuiltIn);

    private final Map<String, LanguageRuntime> byLanguage;

    private RuntimeRegistry(Map<String, LanguageRuntime> byLanguage) {
        this.byLanguage = Map.copyOf(byLanguage);
        this.ordered = List.copyOf(byLanguage.values());
    }

    private final List<LanguageRuntime> ordered;

    /** The built-in runtimes only. */
    public static RuntimeRegistry builtIn() {
        return load(null);
    }

    /**
     * The built-in runtimes with those of {@code userFile} added or replacing them.
     *
     * @param userFile a runtimes TOML file, or null
     * @throws IllegalArgumentException with the file name and the reason when the file cannot be read or parsed
     */
    public static RuntimeRegistry load(Path userFile) {
        Map<String, RuntimeDefinition> definitions = new LinkedHashMap<>();
        for (RuntimeDefinition d : BUILT_IN.get()) {
            definitions.put(d.language(), d);
        }
        if (userFile != null) {
            byte[] bytes;
            try {
                bytes = Files.readAllBytes(userFile);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read runtimes file " + userFile + ": " + e.getMessage());
            }
            for (RuntimeDefinition d : parse(bytes, userFile.toString())) {
                definitions.put(d.language(), d);
            }
        }
        Map<String, LanguageRuntime> runtimes = new LinkedHashMap<>();
        List<Thread> probes = new ArrayList<>();
        Map<String, LanguageRuntime> resolved = java.util.Collections.synchronizedMap(new LinkedHashMap<>());
        VersionCache versions = new VersionCache(UserCache.standard());
        for (RuntimeDefinition d : definitions.values()) {
            probes.add(Thread.ofVirtual().start(() -> resolved.put(d.language(), resolve(d, versions))));
        }
        for (Thread t : probes) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while probing runtimes", e);
            }
        }
        for (String language : definitions.keySet()) {
            runtimes.put(language, resolved.get(language));
        }
        versions.save();
        return new RuntimeRegistry(runtimes);
    }

    private static List<RuntimeDefinition> parseBuiltIn() {
        try (InputStream in = RuntimeRegistry.class.getResourceAsStream("runtimes.toml")) {
            return List.copyOf(parse(in.readAllBytes(), "built-in runtimes.toml"));
        } catch (IOException e) {
            throw new IllegalStateException("built-in runtimes.toml is unreadable", e);
        }
    }

    private static List<RuntimeDefinition> parse(byte[] toml, String source) {
        RuntimeDefinition.File file;
        try {
            file = TOML.get().readValue(toml, RuntimeDefinition.File.class);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("invalid runtimes file " + source + ": " + e.getOriginalMessage());
        }
        if (file == null || file.runtime() == null) {
            throw new IllegalArgumentException("runtimes file " + source + " has no [[runtime]] table");
        }
        for (RuntimeDefinition d : file.runtime()) {
            if (d.language() == null || d.language().isBlank()) {
                throw new IllegalArgumentException("runtimes file " + source + ": a runtime has no language");
            }
            if (d.runCommand() == null || d.runCommand().isEmpty()) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " has no run_command");
            }
            if (d.fileName() == null || d.fileName().isBlank() || d.fileName().contains("/")) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " needs a plain file_name");
            }
            try {
                limitsOf(d);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language() + ": "
                        + e.getMessage());
            }
        }
        return file.runtime();
    }

    private static LanguageRuntime resolve(RuntimeDefinition d, VersionCache versions) {
        Path rootfs = d.rootfs() == null ? null : Path.of(d.rootfs());
        List<String> problems = new ArrayList<>();
        if (rootfs != null && !Files.isDirectory(rootfs.resolve("usr"))) {
            problems.add("rootfs " + rootfs + " has no usr directory");
        }
        List<String> compile = d.compileCommand() == null || d.compileCommand().isEmpty() ? List.of()
                : resolveCommand(d.compileCommand(), rootfs, problems);
        List<String> run = resolveCommand(d.runCommand(), rootfs, problems);
        List<String> pool = d.poolCommand() == null || d.poolCommand().isEmpty() ? List.of()
                : withAgent(resolveCommand(d.poolCommand(), rootfs, problems), "{agent}", d.language());
        List<String> session = d.sessionCommand() == null || d.sessionCommand().isEmpty() ? List.of()
                : withAgent(resolveCommand(d.sessionCommand(), rootfs, problems), "{repl}", d.language() + "-repl");
        Limits[] limits = limitsOf(d); // validated by parse()
        String version = d.version() != null ? d.version()
                : problems.isEmpty() && rootfs == null && d.versionCommand() != null
                        ? probeVersion(resolveCommand(d.versionCommand(), null, new ArrayList<>()), versions) : "";
        return new LanguageRuntime(
                d.language().toLowerCase(Locale.ROOT),
                lower(d.aliases()),
                lower(d.extensions()),
                version,
                d.fileName(),
                compile,
                run,
                d.env() == null ? Map.of() : d.env(),
                limits[0],
                limits[1],
                rootfs,
                d.binds() == null ? List.of() : d.binds(),
                problems.isEmpty() ? null : String.join("; ", problems),
                pool,
                session);
    }

    /** The run and compile limits of a definition: its overrides over the defaults. */
    private static Limits[] limitsOf(RuntimeDefinition d) {
        Limits compileBase = new Limits(30_000, 30_000, 512, 1024 * 1024, 64);
        return new Limits[] {
            d.limits() == null ? Limits.DEFAULT : d.limits().applyTo(Limits.DEFAULT),
            d.compileLimits() == null ? compileBase : d.compileLimits().applyTo(compileBase)};
    }

    private static List<String> lower(List<String> names) {
        return names == null ? List.of() : names.stream().map(s -> s.toLowerCase(Locale.ROOT)).toList();
    }

    /**
     * Replaces {@code placeholder} by the built-in agent {@code agents/<name>}; a command that needs an agent the
     * build does not have yields an empty command (not poolable, or no sessions).
     */
    private static List<String> withAgent(List<String> command, String placeholder, String name) {
        try (InputStream in = RuntimeRegistry.class.getResourceAsStream("agents/" + name)) {
            if (in == null) {
                return command.contains(placeholder) ? List.of() : command;
            }
            String agent = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            return command.stream().map(s -> s.equals(placeholder) ? agent : s).toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    /** Replaces the executable of {@code command} by its absolute path, or records why it cannot. */
    private static List<String> resolveCommand(List<String> command, Path rootfs, List<String> problems) {
        String exe = command.getFirst();
        if (exe.startsWith("/")) {
            return command; // produced by the compile step or given absolute on purpose
        }
        for (String dir : SEARCH) {
            Path onHost = rootfs == null ? Path.of(dir, exe) : rootfs.resolve(dir.substring(1)).resolve(exe);
            if (Files.isExecutable(onHost)) {
                try {
                    Path real = onHost.toRealPath();
                    Path usr = rootfs == null ? Path.of("/usr") : rootfs.resolve("usr").toRealPath();
                    if (!real.startsWith(usr)) {
                        problems.add(exe + " resolves to " + real + ", outside the sandbox's /usr");
                        return command;
                    }
                } catch (IOException e) {
                    continue;
                }
                List<String> resolved = new ArrayList<>(command);
                resolved.set(0, dir + "/" + exe);
                return resolved;
            }
        }
        problems.add(exe + " is not installed (looked in " + String.join(":", SEARCH) + ")");
        return command;
    }

    /**
     * A trusted version command's first version-like token, or "": from the {@link VersionCache} while the
     * executable is unchanged, else run once on the host (javac's alone costs a JVM start).
     */
    private static String probeVersion(List<String> command, VersionCache versions) {
        return versions.get(command, () -> runVersion(command));
    }

    private static String runVersion(List<String> command) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.environment().clear();
            Process p = pb.start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readNBytes(4096);
            if (!p.waitFor(5, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            Matcher m = VERSION.matcher(new String(out, StandardCharsets.UTF_8));
            return m.find() ? m.group() : "";
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    /** Every runtime, in file order. */
    public List<LanguageRuntime> list() {
        return ordered;
    }

    /** The runtime named {@code name} (language or alias, any case), if any. */
    public Optional<LanguageRuntime> find(String name) {
        if (name == null) {
            return Optional.empty();
        }
        String key = name.toLowerCase(Locale.ROOT).strip();
        LanguageRuntime exact = byLanguage.get(key);
        if (exact != null) {
            return Optional.of(exact);
        }
        return ordered.stream().filter(r -> r.aliases().contains(key)).findFirst();
    }

    /** The runtime for a file name's extension, if any. */
    public Optional<LanguageRuntime> forFileName(String fileName) {
        int dot = fileName.lastIndexOf('.');
        if (dot < 0) {
            return Optional.empty();
        }
        String ext = fileName.substring(dot + 1).toLowerCase(Locale.ROOT);
        return ordered.stream().filter(r -> r.extensions().contains(ext)).findFirst();
    }
}
