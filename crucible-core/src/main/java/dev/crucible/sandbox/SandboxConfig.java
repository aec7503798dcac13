package dev.crucible.sandbox;

import java.nio.file.Path;

/**
 * Host-side settings of the sandbox launcher. Immutable; {@link #defaults()} documents each default.
 *
 * @param workRoot directory for this process's private files (seccomp program, synthetic /etc, build dirs);
 *     created with mode 0711 and removed on {@link Sandbox#close()}
 * @param slots how many sandboxes may run at once; each slot has its own unprivileged uid when running as root
 * @param slotUidBase first host uid of the slots (slot N runs as {@code slotUidBase + N})
 * @param fileSizeBytes RLIMIT_FSIZE: the largest file a program may write
 * @param openFiles RLIMIT_NOFILE
 * @param tmpfsBytes size of each of the fresh tmpfs mounts {@code /tmp}, {@code /workspace}, {@code /dev/shm};
 *     never more than half of a run's memory limit, so a full tmpfs is ENOSPC rather than an OOM kill
 */
public record SandboxConfig(
        Path workRoot, int slots, int slotUidBase, long fileSizeBytes, int openFiles, long tmpfsBytes) {

    public SandboxConfig {
        if (slots < 1 || slots > 1024) {
            throw new IllegalArgumentException("slots must be between 1 and 1024");
        }
        if (slotUidBase < 1000) {
            throw new IllegalArgumentException("slot uids must not be system uids (base >= 1000)");
        }
    }

    /**
     * Defaults: a work root under {@code java.io.tmpdir} named after this process, {@code max(4, 2 × cores)} slots,
     * uids from 61000 (below systemd's dynamic range 61184-65519 for up to 184 slots, overridable with
     * {@code CRUCIBLE_SLOT_UID_BASE}), 64 MiB files, 256 open files, 64 MiB tmpfs.
     */
    public static SandboxConfig defaults() {
        String base = System.getenv("CRUCIBLE_SLOT_UID_BASE");
        return new SandboxConfig(
                Path.of(System.getProperty("java.io.tmpdir"), "crucible-" + ProcessHandle.current().pid()),
                Math.max(4, 2 * Runtime.getRuntime().availableProcessors()),
                base == null ? 61000 : Integer.parseInt(base.trim()),
                64L * 1024 * 1024,
                256,
                64L * 1024 * 1024);
    }

    /** These settings with another slot count. */
    public SandboxConfig withSlots(int count) {
        return new SandboxConfig(workRoot, count, slotUidBase, fileSizeBytes, openFiles, tmpfsBytes);
    }
}
