package dev.crucible.sandbox;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Host-side settings of the sandbox launcher. Immutable; {@link #builtIn()} documents each default.
 *
 * @param workParent where this process's private work directory is created (a fresh, randomly named directory,
 *     mode 0711, holding the seccomp program, the synthetic /etc and the programs' files; removed on
 *     {@link Sandbox#close()}); a tmpfs keeps the per-run file operations off the disk
 * @param slots how many sandboxes may run at once; each slot has its own unprivileged uid when running as root
 * @param slotUidBase first host uid of the slots (slot N runs as {@code slotUidBase + N})
 * @param fileSizeBytes RLIMIT_FSIZE: the largest file a program may write
 * @param openFiles RLIMIT_NOFILE
 * @param tmpfsBytes size of each of the fresh tmpfs mounts {@code /tmp}, {@code /workspace}, {@code /dev/shm};
 *     never more than half of a run's memory limit, so a full tmpfs is ENOSPC rather than an OOM kill
 * @param launchHelper whether to launch through the static {@code crucible-launch} helper built into the JAR
 *     (faster); false, or a JAR built without a C compiler, launches through {@code sh} and {@code setpriv}
 * @param selfTest whether {@code BwrapSandbox.create} runs {@code /usr/bin/true} in a sandbox first, so that a host
 *     which cannot build one fails at start with bwrap's words; false where a run follows at once (a one-shot CLI
 *     command) and reports the same failure as its {@code sandbox_error}
 * @param zygote whether Python's warm-pool launches are forked from a zygote where the host allows it
 *     (docs/zygote.md); false spawns every sandbox
 * @param tuneCgroups whether to switch the cgroup hierarchy to {@code favordynmods} when root (host-wide, until the
 *     next mount; see {@code CgroupTuning}); false leaves the host's cgroup mount alone
 * @param runsc gVisor's runsc for the gVisor tier ({@link Isolation#GVISOR}), or null to find the installed one
 * @param runscPlatform runsc's {@code --platform} ({@code ptrace}, {@code systrap}, {@code kvm}), or null for its own
 *     default
 * @param isolation the tier of every runtime whose TOML names none ({@code serve --isolation}); null for
 *     {@link Isolation#NAMESPACES}
 */
public record SandboxConfig(
        Path workParent, int slots, int slotUidBase, long fileSizeBytes, int openFiles, long tmpfsBytes,
        boolean launchHelper, boolean selfTest, boolean tuneCgroups, boolean zygote, Path runsc, String runscPlatform,
        Isolation isolation) {

    public SandboxConfig {
        isolation = isolation == null ? Isolation.NAMESPACES : isolation;
        if (slots < 1 || slots > 1024) {
            throw new IllegalArgumentException("slots must be between 1 and 1024");
        }
        if (slotUidBase < 1000) {
            throw new IllegalArgumentException("slot uids must not be system uids (base >= 1000)");
        }
    }

    /**
     * The settings {@code crucible} itself starts with: {@link #builtIn()} with what this process's environment sets
     * ({@link #fromEnvironment(Map)}), so that an engine embedded in a Java program uses the same uid block, launch
     * chain and tier as the command on the same host ({@code CRUCIBLE_SLOT_UID_BASE} and the rest).
     *
     * @throws IllegalArgumentException for a malformed variable, naming it
     */
    public static SandboxConfig defaults() {
        return fromEnvironment(System.getenv());
    }

    /**
     * The built-in defaults, whatever the environment: the work directory under {@code /dev/shm} (a tmpfs) when
     * writable and not mounted {@code noexec} (container engines mount it so, and the launch helper is executed from
     * there), else {@code java.io.tmpdir}, {@code max(16, 4 × cores)} slots (running and warm-pool sandboxes both hold
     * one), uids from 61000 (below systemd's dynamic range 61184-65519 for up to 184 slots), 64 MiB files, 256 open
     * files, 64 MiB tmpfs, the launch helper, the self-test, cgroups tuned.
     */
    public static SandboxConfig builtIn() {
        Path shm = Path.of("/dev/shm");
        return new SandboxConfig(
                Files.isDirectory(shm) && Files.isWritable(shm) && !mountedNoexec(shm)
                        ? shm : Path.of(System.getProperty("java.io.tmpdir")),
                Math.max(16, 4 * Runtime.getRuntime().availableProcessors()),
                61000,
                64L * 1024 * 1024,
                256,
                64L * 1024 * 1024,
                true,
                true,
                true,
                true,
                null,
                null,
                Isolation.NAMESPACES);
    }

    /**
     * The built-in defaults with what {@code env} sets: {@code CRUCIBLE_SLOT_UID_BASE} (the
     * first slot uid), {@code CRUCIBLE_LAUNCHER=sh} (the portable launch chain), {@code CRUCIBLE_CGROUP_FAVORDYNMODS=0}
     * (leave the cgroup mount alone), {@code CRUCIBLE_ISOLATION}, {@code CRUCIBLE_RUNSC} and {@code CRUCIBLE_RUNSC_PLATFORM}
     * (the gVisor tier).
     *
     * @throws IllegalArgumentException for a uid base that is not a number or is a system uid
     */
    public static SandboxConfig fromEnvironment(Map<String, String> env) {
        SandboxConfig d = builtIn();
        String base = env.get("CRUCIBLE_SLOT_UID_BASE");
        int uidBase;
        try {
            uidBase = base == null || base.isBlank() ? d.slotUidBase : Integer.parseInt(base.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("CRUCIBLE_SLOT_UID_BASE must be a uid, e.g. 61000; got " + base);
        }
        return new SandboxConfig(d.workParent, d.slots, uidBase, d.fileSizeBytes, d.openFiles, d.tmpfsBytes,
                !"sh".equals(env.get("CRUCIBLE_LAUNCHER")), d.selfTest,
                !"0".equals(env.get("CRUCIBLE_CGROUP_FAVORDYNMODS")), !"0".equals(env.get("CRUCIBLE_ZYGOTE")),
                blank(env.get("CRUCIBLE_RUNSC")) ? d.runsc : Path.of(env.get("CRUCIBLE_RUNSC").strip()),
                blank(env.get("CRUCIBLE_RUNSC_PLATFORM")) ? d.runscPlatform : env.get("CRUCIBLE_RUNSC_PLATFORM").strip(),
                blank(env.get("CRUCIBLE_ISOLATION")) ? d.isolation : Isolation.parse(env.get("CRUCIBLE_ISOLATION")));
    }

    private static boolean blank(String value) {
        return value == null || value.isBlank();
    }

    /** These settings with another slot count. */
    public SandboxConfig withSlots(int count) {
        return new SandboxConfig(workParent, count, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper,
                selfTest, tuneCgroups, zygote, runsc, runscPlatform, isolation);
    }

    /** These settings with the launch helper on or off. */
    public SandboxConfig withLaunchHelper(boolean on) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, on, selfTest,
                tuneCgroups, zygote, runsc, runscPlatform, isolation);
    }

    /** These settings with the start-up self-test on or off. */
    public SandboxConfig withSelfTest(boolean on) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper, on,
                tuneCgroups, zygote, runsc, runscPlatform, isolation);
    }

    /** These settings with zygotes on or off. */
    public SandboxConfig withZygote(boolean on) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper,
                selfTest, tuneCgroups, on, runsc, runscPlatform, isolation);
    }

    /** These settings with gVisor's runsc at {@code path} (null: the installed one) on {@code platform} (null: its own). */
    public SandboxConfig withRunsc(Path path, String platform) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper,
                selfTest, tuneCgroups, zygote, path, platform, isolation);
    }

    /** These settings with {@code tier} for every runtime whose TOML names none. */
    public SandboxConfig withIsolation(Isolation tier) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper,
                selfTest, tuneCgroups, zygote, runsc, runscPlatform, tier);
    }

    /** Whether {@code dir} lies on a mount with {@code noexec}, by this process's mountinfo; false when unreadable. */
    static boolean mountedNoexec(Path dir) {
        try {
            return noexec(Files.readAllLines(Path.of("/proc/self/mountinfo")), dir);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Whether the mount that holds {@code dir} (the last-mounted of the longest mount points above it) is {@code
     * noexec}, from {@code /proc/self/mountinfo} lines (field 5 the mount point, field 6 the per-mount options).
     */
    static boolean noexec(List<String> mountinfo, Path dir) {
        Path target = dir.toAbsolutePath().normalize();
        Path best = null;
        boolean noexec = false;
        for (String line : mountinfo) {
            String[] f = line.split(" ");
            if (f.length < 6) {
                continue;
            }
            Path point = Path.of(f[4].replace("\\040", " "));
            if (target.startsWith(point) && (best == null || point.getNameCount() >= best.getNameCount())) {
                best = point;
                noexec = List.of(f[5].split(",")).contains("noexec");
            }
        }
        return noexec;
    }
}
