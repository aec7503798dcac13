package dev.crucible.sandbox;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The argv of one run, built exactly as {@code sandbox-security.md} 3.2 step 3 lays it out:
 * {@code sh} joins the run's cgroups before anything else runs, sets the rlimits, opens the seccomp program as fd 3
 * and drops every variable; then {@code setpriv} becomes the slot's unprivileged uid (when we are root); then
 * {@code bwrap} builds the sandbox and execs the program.
 */
final class LaunchCommand {
    /**
     * Exit code of the launcher when a privileged step fails; with a {@code crucible-launch: } line on stderr,
     * {@link BwrapSandbox} reports a sandbox error.
     */
    static final int JOIN_FAILED = 125;

    private LaunchCommand() {}

    /**
     * The argv through {@code crucible-launch} (one static exec that does what sh and setpriv do below).
     *
     * @param helper the extracted crucible-launch binary
     */
    static List<String> viaHelper(
            SandboxConfig config, Path workRoot, Path helper, Path seccomp, Path bwrap, int uid, List<Path> procsFiles,
            boolean fallbackMemory, SandboxSpec spec) {
        List<String> argv = new ArrayList<>(List.of(helper.toString()));
        for (Path procs : procsFiles) {
            argv.addAll(List.of("--cgroup", procs.toString()));
        }
        Limits limits = spec.limits();
        argv.addAll(List.of("--rlimit", "core=0", "--rlimit", "nofile=" + config.openFiles(),
                "--rlimit", "fsize=" + config.fileSizeBytes()));
        if (spec.workspace() == null) { // a session lives on: its CPU is bounded by the cgroup's quota instead
            argv.addAll(List.of("--rlimit", "cpu=" + cpuSeconds(limits)));
        }
        if (uid >= 0) {
            argv.addAll(List.of("--rlimit", "nproc=" + (limits.pids() + 32)));
        }
        if (fallbackMemory) {
            argv.addAll(List.of("--rlimit", "as=" + (limits.memoryMb() + 64L) * 1024 * 1024));
        }
        argv.addAll(List.of("--seccomp", seccomp.toString()));
        if (uid >= 0) {
            argv.addAll(List.of("--uid", Integer.toString(uid)));
        }
        argv.add("--");
        argv.addAll(bwrapArguments(config, workRoot, bwrap, spec));
        argv.add("--");
        argv.addAll(spec.command());
        return argv;
    }

    private static long cpuSeconds(Limits limits) {
        return Math.max(1, (limits.cpuMs() + 999) / 1000) + 1;
    }

    /**
     * The portable argv: {@code sh} and {@code setpriv}, for hosts where crucible-launch could not be built.
     *
     * @param uid the slot uid to become, or -1 to stay the server's uid
     * @param procsFiles the cgroup.procs files to join (empty without cgroups)
     * @param fallbackMemory whether to bound memory by RLIMIT_AS because no memory cgroup exists
     */
    static List<String> viaShell(
            SandboxConfig config, Path workRoot, Path seccomp, Path bwrap, Path setpriv, int uid,
            List<Path> procsFiles, boolean fallbackMemory, SandboxSpec spec) {
        List<String> argv = new ArrayList<>(List.of("/bin/sh", "-c", wrapperScript(config, seccomp, uid, fallbackMemory,
                spec), "crucible-launch"));
        for (Path procs : procsFiles) {
            argv.add(procs.toString());
        }
        argv.add("--");
        if (uid >= 0) {
            argv.addAll(List.of(setpriv.toString(), "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--pdeathsig=SIGKILL", "--"));
        }
        argv.addAll(bwrapArguments(config, workRoot, bwrap, spec));
        argv.add("--");
        argv.addAll(spec.command());
        return argv;
    }

    private static String wrapperScript(SandboxConfig config, Path seccomp, int uid, boolean fallbackMemory,
            SandboxSpec spec) {
        Limits limits = spec.limits();
        StringBuilder s = new StringBuilder();
        s.append("for g; do [ \"$g\" = -- ] && break; echo $$ > \"$g\" || { echo \"crucible-launch: cannot join $g\" >&2; exit ").append(JOIN_FAILED).append("; }").append("; done\n");
        s.append("while [ \"$1\" != -- ]; do shift; done; shift\n");
        s.append("ulimit -c 0; ulimit -n ").append(config.openFiles());
        s.append("; ulimit -f ").append(config.fileSizeBytes() / 512);
        if (spec.workspace() == null) {
            s.append("; ulimit -t ").append(cpuSeconds(limits));
        }
        if (uid >= 0) {
            // per host uid, so only meaningful with a uid of our own; the pids cgroup is the real bound
            s.append("; ulimit -p ").append(limits.pids() + 32);
        }
        if (fallbackMemory) {
            s.append("; ulimit -v ").append(limits.memoryMb() * 1024L + 64 * 1024);
        }
        s.append('\n');
        s.append("exec 3< '").append(seccomp).append("'\n");
        s.append("unset PWD\n");
        // out of the server's process group and session: a terminal's Ctrl-C must not reach the sandbox
        s.append("command -v setsid >/dev/null && exec setsid \"$@\"\n");
        s.append("exec \"$@\"\n");
        return s.toString();
    }

    private static List<String> bwrapArguments(SandboxConfig config, Path workRoot, Path bwrap, SandboxSpec spec) {
        long tmpfs = Math.min(config.tmpfsBytes(), spec.limits().memoryMb() * 1024L * 1024L / 2);
        Path usr = spec.rootfs() == null ? Path.of("/usr") : spec.rootfs().resolve("usr");
        Path etcRoot = spec.rootfs() == null ? Path.of("/etc") : spec.rootfs().resolve("etc");
        List<String> a = new ArrayList<>(List.of(bwrap.toString(),
                "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--uid", "1000", "--gid", "1000", "--hostname", "sandbox",
                "--ro-bind", usr.toString(), "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/sbin", "/sbin"));
        if (Files.isDirectory(usr.resolve("lib64"))) {
            a.addAll(List.of("--symlink", "usr/lib64", "/lib64"));
        }
        if (spec.rootfs() == null) {
            a.addAll(List.of("--ro-bind", workRoot.resolve("etc").toString(), "/etc"));
        } else {
            a.addAll(List.of(
                    "--ro-bind-try", etcRoot.resolve("alternatives").toString(), "/etc/alternatives",
                    "--ro-bind-try", etcRoot.resolve("ld.so.cache").toString(), "/etc/ld.so.cache",
                    "--ro-bind", workRoot.resolve("etc/passwd").toString(), "/etc/passwd",
                    "--ro-bind", workRoot.resolve("etc/group").toString(), "/etc/group",
                    "--ro-bind", workRoot.resolve("etc/hosts").toString(), "/etc/hosts"));
        }
        for (String path : spec.readOnlyBindsIfPresent()) {
            a.addAll(List.of("--ro-bind-try", path, path));
        }
        // /dev/shm lives in the fresh tmpfs that --dev mounts: private, memory-charged, RLIMIT_FSIZE per file
        a.addAll(List.of("--proc", "/proc", "--dev", "/dev",
                "--size", Long.toString(tmpfs), "--tmpfs", "/tmp"));
        if (spec.init()) {
            a.addAll(List.of("--as-pid-1", "--mqueue", "/dev/mqueue"));
        }
        if (spec.workspace() != null) {
            a.addAll(List.of("--bind", spec.workspace().toString(), "/workspace"));
        } else {
            a.addAll(List.of("--size", Long.toString(tmpfs), "--tmpfs", "/workspace"));
        }
        for (Map.Entry<String, Path> file : spec.files().entrySet()) {
            a.addAll(List.of("--ro-bind", file.getValue().toString(), file.getKey()));
        }
        if (spec.buildDir() != null) {
            a.addAll(List.of(spec.buildWritable() ? "--bind" : "--ro-bind", spec.buildDir().toString(), "/build"));
        }
        a.addAll(List.of("--chdir", "/workspace", "--clearenv",
                "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
                "--setenv", "HOME", "/workspace",
                "--setenv", "LANG", "C.UTF-8",
                "--setenv", "USER", "sandbox"));
        for (Map.Entry<String, String> e : spec.env().entrySet()) {
            a.addAll(List.of("--setenv", e.getKey(), e.getValue()));
        }
        a.addAll(List.of("--cap-drop", "ALL", "--seccomp", "3"));
        return a;
    }
}
