package dev.crucible.runtime;

import dev.crucible.egress.EgressPolicy;
import dev.crucible.image.Images;
import dev.crucible.image.spec.Image;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxRoot;
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
import java.util.concurrent.ConcurrentHashMap;
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
    private final List<LanguageRuntime> ordered;
    private final Map<String, RuntimeDefinition> definitions;
    private final Images images;
    /** Runtimes resolved in an image, by language and image digest: an image's content never changes. */
    private final Map<String, LanguageRuntime> inImages = new ConcurrentHashMap<>();

    private RuntimeRegistry(Map<String, LanguageRuntime> byLanguage, Map<String, RuntimeDefinition> definitions,
            Images images) {
        this.byLanguage = Map.copyOf(byLanguage);
        this.ordered = List.copyOf(byLanguage.values());
        this.definitions = Map.copyOf(definitions);
        this.images = images;
    }

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
        return load(userFile, Images.none());
    }

    /**
     * The built-in runtimes with those of {@code userFile}; a runtime with {@code image = "REF"} runs in that image
     * of {@code images} (unavailable, with the pull command as the reason, while it is not in the store).
     *
     * @throws IllegalArgumentException with the file name and the reason when the file cannot be read or parsed
     */
    public static RuntimeRegistry load(Path userFile, Images images) {
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
            probes.add(Thread.ofVirtual().start(() -> resolved.put(d.language(), resolve(d, versions, images))));
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
        return new RuntimeRegistry(runtimes, definitions, images);
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
            if (d.image() != null && d.rootfs() != null) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " has both image and rootfs; keep one");
            }
            if (d.fileName() == null || d.fileName().isBlank() || d.fileName().contains("/")) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " needs a plain file_name");
            }
            try {
                limitsOf(d);
                egressOf(d);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language() + ": "
                        + e.getMessage());
            }
        }
        return file.runtime();
    }

    private static LanguageRuntime resolve(RuntimeDefinition d, VersionCache versions, Images images) {
        if (d.image() != null) {
            return inImage(d, d.image(), images.find(d.image()).orElse(null));
        }
        Path rootfs = d.rootfs() == null ? null : Path.of(d.rootfs());
        List<String> problems = new ArrayList<>();
        if (rootfs != null && !Files.isDirectory(rootfs.resolve("usr"))) {
            problems.add("rootfs " + rootfs + " has no usr directory");
        }
        Commands commands = Commands.of(d, command -> resolveCommand(command, rootfs, problems));
        String version = d.version() != null ? d.version()
                : problems.isEmpty() && rootfs == null && d.versionCommand() != null
                        ? probeVersion(resolveCommand(d.versionCommand(), null, new ArrayList<>()), versions) : "";
        return build(d, version, commands, d.env() == null ? Map.of() : d.env(),
                rootfs == null ? SandboxRoot.HOST : new SandboxRoot.Usr(rootfs), problems, null);
    }

    /**
     * {@code d} running in {@code image} (null when it is not in the store): executables are looked up in the
     * image's PATH inside the image, the image's Env comes under the runtime's, the version is the image's
     * {@code <LANGUAGE>_VERSION} unless the runtime gives one.
     */
    private static LanguageRuntime inImage(RuntimeDefinition d, String reference, Image image) {
        List<String> problems = new ArrayList<>();
        if (image == null) {
            problems.add("image " + reference + " is not in the store; run: crucible image pull " + reference);
        }
        Map<String, String> env = new LinkedHashMap<>(image == null ? Map.of() : InImage.env(image.env()));
        String path = env.getOrDefault("PATH", InImage.DEFAULT_PATH);
        Commands commands = Commands.of(d, command -> image == null ? command
                : inImageCommand(command, image.rootfs(), path, reference, problems));
        if (d.env() != null) {
            env.putAll(d.env());
        }
        String version = d.version() != null ? d.version()
                : env.getOrDefault(d.language().toUpperCase(Locale.ROOT) + "_VERSION", "");
        return build(d, version, commands, env, image == null ? SandboxRoot.HOST : new SandboxRoot.Image(image.rootfs()),
                problems, new RuntimeImage(reference, image == null ? null : image.digest()));
    }

    private static List<String> inImageCommand(List<String> command, Path root, String path, String reference,
            List<String> problems) {
        String exe = command.getFirst();
        if (exe.startsWith("/build/")) {
            return command; // produced by the compile step
        }
        Optional<String> found = exe.startsWith("/") ? InImage.which(root, "/", exe.substring(1)).map(p -> exe)
                : InImage.which(root, path, exe);
        if (found.isEmpty()) {
            problems.add(exe + " is not in image " + reference + " (looked in " + path + ")");
            return command;
        }
        List<String> resolved = new ArrayList<>(command);
        resolved.set(0, found.get());
        return resolved;
    }

    /** A definition's commands, resolved, with the built-in agents in place. */
    private record Commands(List<String> compile, List<String> run, List<String> pool, List<String> session) {
        static Commands of(RuntimeDefinition d, java.util.function.UnaryOperator<List<String>> resolve) {
            return new Commands(
                    d.compileCommand() == null || d.compileCommand().isEmpty() ? List.of() : resolve.apply(d.compileCommand()),
                    resolve.apply(d.runCommand()),
                    d.poolCommand() == null || d.poolCommand().isEmpty() ? List.of()
                            : withAgent(resolve.apply(d.poolCommand()), "{agent}", d.language()),
                    d.sessionCommand() == null || d.sessionCommand().isEmpty() ? List.of()
                            : withAgent(resolve.apply(d.sessionCommand()), "{repl}", d.language() + "-repl"));
        }
    }

    private static LanguageRuntime build(RuntimeDefinition d, String version, Commands c, Map<String, String> env,
            SandboxRoot root, List<String> problems, RuntimeImage image) {
        Limits[] limits = limitsOf(d); // validated by parse()
        return new LanguageRuntime(
                d.language().toLowerCase(Locale.ROOT),
                lower(d.aliases()),
                lower(d.extensions()),
                version,
                d.fileName(),
                c.compile(),
                c.run(),
                env,
                limits[0],
                limits[1],
                root,
                d.binds() == null ? List.of() : d.binds(),
                problems.isEmpty() ? null : String.join("; ", problems),
                c.pool(),
                c.session(),
                image);
    }

    /** A definition's own egress list ({@code egress_allow}), none when it has none. */
    private static EgressPolicy egressOf(RuntimeDefinition d) {
        return d.egressAllow() == null ? EgressPolicy.none() : EgressPolicy.parse(d.egressAllow());
    }

    /**
     * The egress a runtime's requests may ask for besides the server's list: its {@code egress_allow} in the runtimes
     * TOML, written by the operator ({@link EgressPolicy#none()} when it has none).
     */
    public EgressPolicy egressAllow(LanguageRuntime runtime) {
        return definitions.values().stream().filter(d -> d.language().equalsIgnoreCase(runtime.language()))
                .findFirst().map(RuntimeRegistry::egressOf).orElse(EgressPolicy.none());
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

    /** Every runtime, in file order; a runtime in an image as the store has it now. */
    public List<LanguageRuntime> list() {
        return ordered.stream().map(this::current).toList();
    }

    /** The images this registry's runtimes run in. */
    public Images images() {
        return images;
    }

    /**
     * {@code runtime} as it is now: a runtime whose TOML names an image is looked up in the store again (an image
     * pulled after start-up makes it available); others are returned as they are.
     */
    public LanguageRuntime current(LanguageRuntime runtime) {
        if (runtime.image() == null || !byLanguage.containsKey(runtime.language())) {
            return runtime;
        }
        RuntimeDefinition d = definitionOf(runtime);
        if (d == null || d.image() == null) {
            return runtime;
        }
        return images.find(d.image()).map(image -> inImage(runtime, image))
                .orElse(byLanguage.get(runtime.language()));
    }

    /**
     * {@code runtime}'s language running in {@code image}: its commands looked up inside the image (unavailable,
     * with the reason, when the image lacks them). Kept per language and image digest.
     */
    public LanguageRuntime inImage(LanguageRuntime runtime, Image image) {
        RuntimeDefinition d = definitionOf(runtime);
        if (d == null) {
            throw new IllegalArgumentException("not a runtime of this registry: " + runtime.language());
        }
        return inImages.computeIfAbsent(runtime.language() + "@" + image.digest(), k -> {
            String reference = d.image() != null && images.find(d.image()).map(Image::digest).orElse("")
                    .equals(image.digest()) ? d.image() : image.name();
            return inImage(d, reference, image);
        });
    }

    private RuntimeDefinition definitionOf(LanguageRuntime runtime) {
        return definitions.values().stream().filter(d -> d.language().equalsIgnoreCase(runtime.language()))
                .findFirst().orElse(null);
    }

    /** The runtime named {@code name} (language or alias, any case), if any. */
    public Optional<LanguageRuntime> find(String name) {
        if (name == null) {
            return Optional.empty();
        }
        String key = name.toLowerCase(Locale.ROOT).strip();
        LanguageRuntime exact = byLanguage.get(key);
        if (exact != null) {
            return Optional.of(current(exact));
        }
        return ordered.stream().filter(r -> r.aliases().contains(key)).findFirst().map(this::current);
    }

    /** The runtime for a file name's extension, if any. */
    public Optional<LanguageRuntime> forFileName(String fileName) {
        int dot = fileName.lastIndexOf('.');
        if (dot < 0) {
            return Optional.empty();
        }
        String ext = fileName.substring(dot + 1).toLowerCase(Locale.ROOT);
        return ordered.stream().filter(r -> r.extensions().contains(ext)).findFirst().map(this::current);
    }
}
