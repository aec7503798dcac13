package dev.crucible.sandbox;

import dev.crucible.egress.proxy.EgressProxy;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What to run in one sandbox. Immutable.
 *
 * @param command argv inside the sandbox; the first element is an absolute path visible inside
 * @param env variables set inside the sandbox on top of PATH, HOME, LANG, USER (nothing of the host is passed)
 * @param files host files bound read-only into the sandbox at the given absolute sandbox paths
 * @param buildDir host directory bound at {@code /build}, or null for none
 * @param buildWritable whether {@code /build} is writable (a compile step) or read-only (a run step)
 * @param readOnlyBindsIfPresent host paths bound read-only at the same place when they exist (e.g. a JDK's /etc)
 * @param root the file system the sandbox sees: the host's {@code /usr}, a rootfs's, or an image's whole root
 * @param stdin bytes written to the program's standard input, then closed
 * @param limits resource limits
 * @param workspace host directory bound read-write at {@code /workspace} (a session's), or null for a fresh tmpfs
 * @param init whether the program is the sandbox's init (pid 1, bwrap {@code --as-pid-1}) with a fresh POSIX message
 *     queue file system at {@code /dev/mqueue}: for a batch agent that runs programs as its children and must be out
 *     of their reach (the kernel drops every signal sent to a namespace's init from inside unless it handles it) and
 *     able to see and remove every message queue they leave
 * @param egress the proxy that answers the sandbox's {@code 127.0.0.1:}{@value #PROXY_PORT}, or null for no network at
 *     all (the default). With one, the sandbox runs in a network namespace of the server's (only loopback, with the
 *     proxy's listener in it), may make AF_INET/AF_INET6 sockets, and gets the proxy variables; the launch hands the
 *     listener to the proxy, whose owner closes it when the sandbox is over
 * @param isolation the wall it runs behind ({@link Isolation#NAMESPACES} when null)
 */
public record SandboxSpec(
        List<String> command,
        Map<String, String> env,
        Map<String, Path> files,
        Path buildDir,
        boolean buildWritable,
        List<String> readOnlyBindsIfPresent,
        SandboxRoot root,
        byte[] stdin,
        Limits limits,
        Path workspace,
        boolean init,
        EgressProxy egress,
        Isolation isolation) {

    /** The port of the egress proxy inside a sandbox's own loopback. */
    public static final int PROXY_PORT = 3128;

    public SandboxSpec {
        command = List.copyOf(command);
        if (command.isEmpty()) {
            throw new IllegalArgumentException("empty command");
        }
        env = Map.copyOf(env);
        files = Map.copyOf(files);
        readOnlyBindsIfPresent = List.copyOf(readOnlyBindsIfPresent);
        stdin = stdin == null ? new byte[0] : stdin;
        Objects.requireNonNull(limits, "limits");
        root = root == null ? SandboxRoot.HOST : root;
        isolation = isolation == null ? Isolation.NAMESPACES : isolation;
    }

    /** A spec without a tier of its own ({@link Isolation#NAMESPACES}). */
    @SuppressWarnings("checkstyle:ParameterNumber") // the record's components but its tier, for the callers written before tiers
    public SandboxSpec(List<String> command, Map<String, String> env, Map<String, Path> files, Path buildDir,
            boolean buildWritable, List<String> readOnlyBindsIfPresent, SandboxRoot root, byte[] stdin, Limits limits,
            Path workspace, boolean init, EgressProxy egress) {
        this(command, env, files, buildDir, buildWritable, readOnlyBindsIfPresent, root, stdin, limits, workspace,
                init, egress, null);
    }

    /** This spec behind {@code tier}. */
    public SandboxSpec withIsolation(Isolation tier) {
        return new SandboxSpec(command, env, files, buildDir, buildWritable, readOnlyBindsIfPresent, root, stdin, limits,
                workspace, init, egress, tier);
    }

    /** A spec without network. */
    @SuppressWarnings("checkstyle:ParameterNumber") // the record's components but its network, for older callers
    public SandboxSpec(List<String> command, Map<String, String> env, Map<String, Path> files, Path buildDir,
            boolean buildWritable, List<String> readOnlyBindsIfPresent, SandboxRoot root, byte[] stdin, Limits limits,
            Path workspace, boolean init) {
        this(command, env, files, buildDir, buildWritable, readOnlyBindsIfPresent, root, stdin, limits, workspace,
                init, null);
    }

    /** This spec with its egress through {@code proxy} (null: no network). */
    public SandboxSpec withEgress(EgressProxy proxy) {
        return new SandboxSpec(command, env, files, buildDir, buildWritable, readOnlyBindsIfPresent, root, stdin, limits,
                workspace, init, proxy, isolation);
    }

    /** A spec whose program is not the sandbox's init. */
    public SandboxSpec(List<String> command, Map<String, String> env, Map<String, Path> files, Path buildDir,
            boolean buildWritable, List<String> readOnlyBindsIfPresent, SandboxRoot root, byte[] stdin, Limits limits,
            Path workspace) {
        this(command, env, files, buildDir, buildWritable, readOnlyBindsIfPresent, root, stdin, limits, workspace,
                false);
    }

    /** A spec with a fresh tmpfs {@code /workspace}. */
    public SandboxSpec(List<String> command, Map<String, String> env, Map<String, Path> files, Path buildDir,
            boolean buildWritable, List<String> readOnlyBindsIfPresent, SandboxRoot root, byte[] stdin, Limits limits) {
        this(command, env, files, buildDir, buildWritable, readOnlyBindsIfPresent, root, stdin, limits, null);
    }

    /** A spec that runs {@code command} with the given limits and nothing else. */
    public static SandboxSpec of(List<String> command, Limits limits) {
        return new SandboxSpec(command, Map.of(), Map.of(), null, false, List.of(), SandboxRoot.HOST, null, limits);
    }

}
