package dev.crucible.runtime;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxHost;
import dev.crucible.sandbox.SandboxRoot;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A language as Crucible runs it: where the program goes, how it is compiled and run, with which limits.
 * Immutable. Commands hold absolute executable paths (resolved once on the host) and {@code {file}},
 * {@code {heap_mb}}, {@code {memory_mb}} placeholders.
 *
 * @param language the canonical name, e.g. {@code python}
 * @param aliases other names accepted for it
 * @param extensions file extensions (without dot) that select it
 * @param version the interpreter or compiler version, or "" when unknown
 * @param fileName the program's file name in {@code /workspace}
 * @param compileCommand the compile step, or an empty list for interpreted languages
 * @param runCommand the run step
 * @param env variables set in the sandbox
 * @param limits default limits of a run
 * @param compileLimits limits of the compile step
 * @param root what the sandbox sees as its file system: the host's /usr, a rootfs's, or an image's whole root
 * @param binds host paths bound read-only when present
 * @param unavailableReason why it cannot run here, or null when it can
 * @param poolCommand the warm-pool agent's command (runs one program from stdin), or empty when not poolable
 * @param sessionCommand the session agent's command (a persistent interpreter speaking the framed protocol), or
 *     empty when the language has no sessions
 * @param image the image it runs in (its reference as asked for and the digest it resolved to), or null on the host
 * @param isolation the wall its programs run behind ({@code isolation} in the TOML), or null where it names none (the
 *     server's default then applies: {@link #withDefaultIsolation})
 */
public record LanguageRuntime(
        String language,
        List<String> aliases,
        List<String> extensions,
        String version,
        String fileName,
        List<String> compileCommand,
        List<String> runCommand,
        Map<String, String> env,
        Limits limits,
        Limits compileLimits,
        SandboxRoot root,
        List<String> binds,
        String unavailableReason,
        List<String> poolCommand,
        List<String> sessionCommand,
        RuntimeImage image,
        Isolation isolation) {

    public LanguageRuntime {
        aliases = List.copyOf(aliases);
        extensions = List.copyOf(extensions);
        compileCommand = List.copyOf(compileCommand);
        runCommand = List.copyOf(runCommand);
        env = Map.copyOf(env);
        binds = List.copyOf(binds);
        poolCommand = List.copyOf(poolCommand);
        sessionCommand = List.copyOf(sessionCommand);
        root = root == null ? SandboxRoot.HOST : root;
    }

    /** This runtime with the program written as {@code name} (a client's own file name); the commands follow it. */
    public LanguageRuntime withFileName(String name) {
        return new LanguageRuntime(language, aliases, extensions, version, name, compileCommand, runCommand, env, limits,
                compileLimits, root, binds, unavailableReason, poolCommand, sessionCommand, image, isolation);
    }

    /** This runtime behind {@code tier} (a request asking for a stronger wall than the runtime's own). */
    public LanguageRuntime withIsolation(Isolation tier) {
        return new LanguageRuntime(language, aliases, extensions, version, fileName, compileCommand, runCommand, env,
                limits, compileLimits, root, binds, unavailableReason, poolCommand, sessionCommand, image, tier);
    }

    /**
     * This runtime behind the tier {@code asked} (null: its own), for a run or a session: a request may ask for a
     * stronger wall than the runtime's, never a weaker one.
     *
     * @param host says whether this host can give a tier, and why not
     * @throws RequestException {@code invalid_request} for an unknown or weaker tier, {@code isolation_unavailable}
     *     when this host cannot give the tier (with the reason)
     */
    public LanguageRuntime behind(String asked, SandboxHost host) {
        Isolation wanted = null;
        if (asked != null) {
            try {
                wanted = Isolation.parse(asked);
            } catch (IllegalArgumentException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
            }
        }
        return behind(wanted, host);
    }

    /**
     * As {@link #behind(String, SandboxHost)}, with the tier already read ({@code wanted} null:
     * this runtime's own).
     */
    public LanguageRuntime behind(Isolation wanted, SandboxHost host) {
        Isolation tier = tier();
        if (wanted != null) {
            if (wanted.compareTo(tier) < 0) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "runtime " + language + " runs behind "
                        + tier.wire() + "; a request may ask for a stronger isolation, never a weaker one");
            }
            tier = wanted;
        }
        String why = host.isolationUnavailable(tier);
        if (why != null) {
            throw new RequestException(ErrorCode.ISOLATION_UNAVAILABLE, "isolation \"" + tier.wire()
                    + "\" is not available on this server: " + why);
        }
        return tier == tier() ? this : withIsolation(tier);
    }

    /** This runtime behind {@code tier} when it names no tier of its own ({@code serve --isolation}). */
    public LanguageRuntime withDefaultIsolation(Isolation tier) {
        return isolation != null || tier == null ? this : withIsolation(tier);
    }

    /** The wall its programs run behind: its own, else {@link Isolation#NAMESPACES}. */
    public Isolation tier() {
        return isolation == null ? Isolation.NAMESPACES : isolation;
    }

    /** The digest of the image it runs in, or null on the host: what results carry as {@code image_digest}. */
    public String imageDigest() {
        return image == null ? null : image.digest();
    }

    /** Whether sessions (a persistent interpreter) can run this language. */
    public boolean interactive() {
        return !sessionCommand.isEmpty() && available();
    }

    /** The session agent's command with placeholders filled for {@code limits}. */
    public List<String> sessionArgv(Limits limits) {
        return fill(sessionCommand, limits);
    }

    /** Whether a warm pool can serve this runtime. */
    public boolean poolable() {
        return !poolCommand.isEmpty() && available();
    }

    /** The warm-pool agent's command with placeholders filled for {@code limits}. */
    public List<String> poolArgv(Limits limits) {
        return fill(poolCommand, limits);
    }

    public boolean available() {
        return unavailableReason == null;
    }

    public boolean compiled() {
        return !compileCommand.isEmpty();
    }

    /** The compile command with placeholders filled for {@code limits}. */
    public List<String> compileArgv(Limits limits) {
        return fill(compileCommand, limits);
    }

    /** The run command with placeholders filled for {@code limits}, then {@code args}. */
    public List<String> runArgv(Limits limits, List<String> args) {
        List<String> argv = new ArrayList<>(fill(runCommand, limits));
        argv.addAll(args);
        return argv;
    }

    private List<String> fill(List<String> command, Limits limits) {
        String heap = Integer.toString(Math.max(16, limits.memoryMb() / 2));
        return command.stream().map(s -> s.replace("{file}", fileName).replace("{heap_mb}", heap)
                .replace("{memory_mb}", Integer.toString(limits.memoryMb()))).toList();
    }
}
