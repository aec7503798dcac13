package dev.crucible.sandbox;

import java.nio.file.Path;

/**
 * What a sandbox sees as its file system besides Crucible's own {@code /tmp}, {@code /workspace}, {@code /proc},
 * {@code /dev} and synthetic {@code /etc} files (see docs/sandbox-recipe.md, File system).
 */
public sealed interface SandboxRoot {
    /** The host's {@code /usr} (and the usr-merge links to it), read-only. */
    SandboxRoot HOST = new Host();

    /** The host's {@code /usr}. */
    record Host() implements SandboxRoot {}

    /** A directory whose {@code usr} replaces the host's (a runtime's {@code rootfs}). */
    record Usr(Path dir) implements SandboxRoot {}

    /**
     * An unpacked image: its root becomes the sandbox's {@code /}, read-only. The image store made the mount points
     * ({@code /proc}, {@code /dev}, {@code /tmp}, {@code /workspace}, {@code /build}, {@code /etc/passwd},
     * {@code /etc/group}, {@code /etc/hosts}) when it unpacked it.
     */
    record Image(Path dir) implements SandboxRoot {}
}
