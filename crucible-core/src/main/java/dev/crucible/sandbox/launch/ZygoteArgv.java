package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The launch of a zygote (docs/zygote.md): {@link LaunchCommand}'s argv for the warm pool's forking parent. */
final class ZygoteArgv {
    private ZygoteArgv() {}

    /**
     * The argv of a zygote for the warm-pool launches like {@code spec} (docs/zygote.md): crucible-launch becomes
     * {@code uid} and enters a user namespace with {@code map} as its id maps; bwrap runs there as root, builds the
     * same box as a spawned sandbox's, binds {@code controlDir} at /tmp/.crucible-zygote and keeps the capabilities the
     * zygote's children need to make their own namespaces and drop to their uid; bwrap loads {@code zygoteSeccomp} (the
     * zygote's own program: every rule but those on the calls its children are made with) onto the zygote, which
     * reads the children's program from {@code controlDir}.
     */
    static List<String> argv(LaunchCommand c, int uid, String map, SandboxSpec spec, Path controlDir,
            String zygoteSource, Path zygoteSeccomp) {
        if (!c.viaHelper()) {
            throw new IllegalStateException("a zygote needs crucible-launch");
        }
        List<LaunchCommand.Rlimit> rlimits = List.of(new LaunchCommand.Rlimit("core", 'c', 0, 1), new LaunchCommand.Rlimit("nofile", 'n', 4096, 1));
        List<String> argv = c.viaHelper(List.of(), rlimits, uid, zygoteSeccomp, null);
        argv.add(argv.size() - 1, "--userns-map");
        argv.add(argv.size() - 1, map);
        List<String> box = new ArrayList<>(c.bwrapArguments(spec, false));
        int all = box.indexOf("--unshare-all");
        box.subList(all, all + 3).clear(); // --unshare-all --unshare-user --disable-userns: the user namespace is ours
        box.addAll(all, List.of("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
                "--unshare-cgroup-try", "--as-pid-1"));
        int uidAt = box.indexOf("--uid");
        box.set(uidAt + 1, "0");
        box.set(box.indexOf("--gid") + 1, "0");
        box.subList(box.size() - 4, box.size()).clear(); // --cap-drop ALL --seccomp 3
        box.addAll(List.of("--bind", controlDir.toString(), "/tmp/.crucible-zygote", "--seccomp", "3", "--cap-drop", "ALL",
                "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_KILL"));
        argv.addAll(box);
        argv.add("--");
        List<String> command = spec.command();
        argv.addAll(List.of(command.get(0), "-c", zygoteSource));
        argv.addAll(command.subList(2, command.size()));
        return argv;
    }
}
