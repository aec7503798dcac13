package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.Cgroups;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The launch of a session's sandbox with a root of its own (issue 27): {@link LaunchCommand}'s argv, rooted. */
final class RootedArgv {
    private RootedArgv() {}

    /**
     * What root of a session's user namespace may do: Docker's default set without MKNOD and NET_RAW (no device, no
     * raw socket), and without SYS_CHROOT (the seccomp filter refuses chroot anyway). Never SYS_ADMIN, SYS_PTRACE,
     * NET_ADMIN, SYS_RESOURCE or SYS_TIME.
     */
    static final List<String> ROOT_CAPABILITIES = List.of("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
            "CAP_FSETID", "CAP_SETUID", "CAP_SETGID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_KILL", "CAP_NET_BIND_SERVICE",
            "CAP_AUDIT_WRITE");


    /**
     * The argv of a session's sandbox with its own writable root ({@link SandboxRoot.Overlaid}) and a root inside:
     * crucible-launch becomes {@code rootUid} (the first of the session's block of {@link LaunchCommand#ROOT_BLOCK} host uids),
     * enters a user namespace mapping 0-999 and 1001-4094 to that block, 1000 to {@code userUid} (so its files are
     * the session's as before) and 65534 to the block's last, mounts the overlay of each layer there, and bwrap runs
     * the supervisor as root of that namespace with {@link #ROOT_CAPABILITIES}; the supervisor makes the interpreter
     * and every command but a root one the user 1000.
     */
    static List<String> argv(LaunchCommand c, long rootUid, int userUid, Cgroups.RunGroup group, SandboxSpec spec,
            String netns, Path control) {
        if (!(spec.root() instanceof SandboxRoot.Overlaid own)) {
            throw new IllegalArgumentException("a rooted sandbox needs an overlaid root");
        }
        if (!c.viaHelper() || !c.supervises() || control == null) {
            throw new IllegalStateException("root inside a session needs crucible-launch and crucible-supervisor");
        }
        List<Path> procsFiles = group == null ? List.of() : group.procsFiles();
        Path program = c.seccompProgram(netns != null);
        List<String> argv = c.viaHelper(procsFiles, c.rlimits((int) Math.min(rootUid, Integer.MAX_VALUE), group == null,
                spec), rootUid, program, netns);
        long r = rootUid;
        argv.addAll(argv.size() - 1, List.of("--control", control.toString(),
                "--userns-map", "0 " + r + " 1000,1000 " + userUid + " 1,1001 " + (r + 1001) + " "
                        + (LaunchCommand.ROOT_BLOCK - 1002) + ",65534 " + (r + LaunchCommand.ROOT_BLOCK - 1) + " 1",
                "--own-mounts", own.mounts().getParent().toString()));
        for (SandboxRoot.Layer layer : own.layers()) {
            argv.addAll(argv.size() - 1, List.of("--overlay-lower", layer.at(),
                    "--overlay-at", own.mountPoint(layer).toString(), "--overlay-upper", layer.upper().toString(),
                    "--overlay-work", layer.work().toString()));
        }
        List<String> box = new ArrayList<>(c.bwrapArguments(spec, netns != null));
        int all = box.indexOf("--unshare-all");
        box.subList(all, all + 3).clear(); // --unshare-all --unshare-user --disable-userns: the user namespace is ours
        box.addAll(all, netns != null ? List.of("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
                : List.of("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net"));
        box.set(box.indexOf("--uid") + 1, "0");
        box.set(box.indexOf("--gid") + 1, "0");
        box.subList(box.size() - 4, box.size()).clear(); // --cap-drop ALL --seccomp 3
        box.addAll(List.of("--seccomp", "3", "--cap-drop", "ALL"));
        ROOT_CAPABILITIES.forEach(cap -> box.addAll(List.of("--cap-add", cap))); // one each: bwrap cuts a list short
        box.addAll(List.of("--ro-bind", c.supervisorBinary().toString(), LaunchCommand.SUPERVISOR, "--",
                LaunchCommand.SUPERVISOR, "4", "--"));
        argv.addAll(box);
        argv.addAll(spec.command());
        return argv;
    }

    /**
     * bubblewrap's binds of a session's own root: its directory at {@code /} (its own {@code /etc}, with passwd naming
     * root and user, was written when the session was made), then each layer's overlay in its place.
     */
    static List<String> binds(SandboxRoot.Overlaid own) {
        List<String> binds = new ArrayList<>(List.of("--bind", own.root().toString(), "/"));
        for (SandboxRoot.Layer layer : own.layers()) {
            binds.addAll(List.of("--bind", own.mountPoint(layer).toString(), layer.at()));
        }
        return binds;
    }

    /**
     * Why {@code dir}'s mount cannot be idmapped here (the lower layer of a session's own root), in crucible-launch's
     * words, or null when it can: {@code crucible-launch --probe-idmap DIR}, bounded to 10 s.
     */
    static String idmapUnavailable(Path helper, Path dir) {
        try {
            Process p = new ProcessBuilder(helper.toString(), "--probe-idmap", dir.toString()).redirectErrorStream(true)
                    .start();
            p.getOutputStream().close();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "crucible-launch --probe-idmap did not answer in 10 s";
            }
            String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return p.exitValue() == 0 ? null : said.isEmpty() ? "crucible-launch --probe-idmap failed" : said;
        } catch (IOException e) {
            return "cannot run crucible-launch --probe-idmap: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while probing for idmapped mounts";
        }
    }
}
