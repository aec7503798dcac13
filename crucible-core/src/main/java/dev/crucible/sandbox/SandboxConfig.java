package dev.crucible.sandbox;

import java.nio.file.Path;

/**
 * Host-side settings of the sandbox launcher. Immutable; {@link #defaults()} documents each default.
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
 * @param selfTest whether {@link Sandbox#create} runs {@code /usr/bin/true} in a sandbox first, so that a host which
 *     cannot build one fails at start with bwrap's words; false where a run follows at once (a one-shot CLI command)
 *     and reports the same failure as its {@code sandbox_error}
 */
public record SandboxConfig(
        Path workParent, int slots, int slotUidBase, long fileSizeBytes, int openFiles, long tmpfsBytes,
        boolean launchHelper, boolean selfTest) {

    public SandboxConfig {
        if (slots < 1 || slots > 1024) {
            throw new IllegalArgumentException("slots must be between 1 and 1024");
        }
        if (slotUidBase < 1000) {
            throw new IllegalArgumentException("slot uids must not be system uids (base >= 1000)");
        }
    }

    /**
     * Defaults: the work directory under {@code /dev/shm} (a tmpfs) when writable, else {@code java.io.tmpdir},
     * {@code max(16, 4 × cores)} slots (running and warm-pool sandboxes both hold one),
     * uids from 61000 (below systemd's dynamic range 61184-65519 for up to 184 slots, overridable with
     * {@code CRUCIBLE_SLOT_UID_BASE}), 64 MiB files, 256 open files, 64 MiB tmpfs, the launch helper unless
     * {@code CRUCIBLE_LAUNCHER=sh}.
     */
    public static SandboxConfig defaults() {
        String base = System.getenv("CRUCIBLE_SLOT_UID_BASE");
        return new SandboxConfig(
                java.nio.file.Files.isDirectory(Path.of("/dev/shm")) && java.nio.file.Files.isWritable(Path.of("/dev/shm"))
                        ? Path.of("/dev/shm") : Path.of(System.getProperty("java.io.tmpdir")),
                Math.max(16, 4 * Runtime.getRuntime().availableProcessors()),
                base == null ? 61000 : Integer.parseInt(base.trim()),
                64L * 1024 * 1024,
                256,
                64L * 1024 * 1024,
                !"sh".equals(System.getenv("CRUCIBLE_LAUNCHER")),
                true);
    }

    /** These settings with another slot count. */
    public SandboxConfig withSlots(int count) {
        return new SandboxConfig(workParent, count, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper,
                selfTest);
    }

    /** These settings with the launch helper on or off. */
    public SandboxConfig withLaunchHelper(boolean on) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, on, selfTest);
    }

    /** These settings with the start-up self-test on or off. */
    public SandboxConfig withSelfTest(boolean on) {
        return new SandboxConfig(workParent, slots, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes, launchHelper, on);
    }

}
