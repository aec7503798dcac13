package dev.crucible.runtime;

import dev.crucible.image.Images;
import dev.crucible.image.spec.Image;
import dev.crucible.sandbox.SandboxRoot;
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
import java.util.function.UnaryOperator;

/**
 * A definition made a {@link LanguageRuntime}: each command's executable resolved once, in {@code /usr/local/bin} and
 * {@code /usr/bin} of the host or of the runtime's rootfs (it must resolve inside {@code /usr}, so that the sandbox
 * sees it) or in its image's {@code PATH} inside the image; the built-in agents put in; the version given, probed or
 * taken from the image. A runtime whose tools are missing is kept, marked unavailable with the reasons.
 */
final class RuntimeResolver {
    private static final List<String> SEARCH = List.of("/usr/local/bin", "/usr/bin");

    private RuntimeResolver() {}

    /**
     * {@code d} as it runs here: on the host's {@code /usr}, a rootfs's, or in its image of {@code images}; unavailable,
     * with the reasons, when something it needs is missing.
     */
    static LanguageRuntime resolve(RuntimeDefinition d, VersionCache versions, Images images) {
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
                        ? VersionProbe.probe(resolveCommand(d.versionCommand(), null, new ArrayList<>()), versions) : "";
        return build(d, version, commands, d.env() == null ? Map.of() : d.env(),
                rootfs == null ? SandboxRoot.HOST : new SandboxRoot.Usr(rootfs), problems, null);
    }

    /**
     * {@code d} running in {@code image} (null when it is not in the store): executables are looked up in the
     * image's PATH inside the image, the image's Env comes under the runtime's, the version is the image's
     * {@code <LANGUAGE>_VERSION} unless the runtime gives one.
     */
    static LanguageRuntime inImage(RuntimeDefinition d, String reference, Image image) {
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
        static Commands of(RuntimeDefinition d, UnaryOperator<List<String>> resolve) {
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
        return new LanguageRuntime(
                d.language().toLowerCase(Locale.ROOT),
                lower(d.aliases()),
                lower(d.extensions()),
                version,
                d.fileName(),
                c.compile(),
                c.run(),
                env,
                d.runLimits(), // validated as the file was read
                d.compileStepLimits(),
                root,
                d.binds() == null ? List.of() : d.binds(),
                problems.isEmpty() ? null : String.join("; ", problems),
                c.pool(),
                c.session(),
                image,
                d.tier());
    }

    private static List<String> lower(List<String> names) {
        return names == null ? List.of() : names.stream().map(s -> s.toLowerCase(Locale.ROOT)).toList();
    }

    /**
     * Replaces {@code placeholder} by the built-in agent {@code agents/<name>}; a command that needs an agent the
     * build does not have yields an empty command (not poolable, or no sessions).
     */
    private static List<String> withAgent(List<String> command, String placeholder, String name) {
        try (InputStream in = RuntimeResolver.class.getResourceAsStream("agents/" + name)) {
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
}
