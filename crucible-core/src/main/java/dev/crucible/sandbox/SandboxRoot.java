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

    /**
     * A private, writable copy of an image's root (an image build's): bound writable at {@code /}, the program runs as
     * uid and gid 0 of the sandbox's user namespace (with no capability, under the same seccomp filter) so that it may
     * change the system directories, and the launcher gives the whole tree to the run's host uid first. Mount points
     * as for {@link Image}; what is written there lands in Crucible's own mounts, never in {@code dir}.
     */
    record Writable(Path dir) implements SandboxRoot {}

    /**
     * A session's own writable root (issue 27): {@code root} (its {@code /etc}, {@code /home}, {@code /var}…, the
     * usr-merge links) bound writable at {@code /}, and at {@code /usr} an overlay of the host's {@code /usr} (idmapped,
     * read-only) with the session's {@code usrUpper} and {@code usrWork}, mounted at {@code mounts/usr} over
     * {@code mounts/lower} by the launcher in namespaces of the session's own. The sandbox has a user namespace with a
     * root: its supervisor runs as that root, its interpreter and commands as the user 1000 unless a command asks for
     * root. Every directory is the server's to make before the launch; the session's writes go to its disk.
     */
    record Overlaid(Path root, Path usrUpper, Path usrWork, Path mounts) implements SandboxRoot {}
}
