package dev.crucible.sandbox;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

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
     * usr-merge links) bound writable at {@code /}, and at each {@link Layer}'s place an overlay of the host's directory
     * of that name (idmapped, read-only) with the session's upper and work directories, mounted at
     * {@code mounts/<name>} over {@code mounts/<name>.lower} by the launcher in namespaces of the session's own. The
     * sandbox has a user namespace with a root: its supervisor runs as that root, its interpreter and commands as the
     * user 1000 unless a command asks for root. Every directory is the server's to make before the launch; the
     * session's writes go to its disk.
     */
    record Overlaid(Path root, List<Layer> layers, Path mounts) implements SandboxRoot {
        public Overlaid {
            layers = List.copyOf(layers);
        }

        /** Where the overlay of {@code layer} is mounted before bubblewrap binds it in place. */
        public Path mountPoint(Layer layer) {
            return mounts.resolve(layer.name());
        }

        /** Where the idmapped host directory under {@code layer}'s overlay is placed. */
        public Path lowerPoint(Layer layer) {
            return mounts.resolve(layer.name() + ".lower");
        }
    }

    /**
     * One overlay of a session's own root: the host's directory {@code at} (an absolute path: {@code /usr},
     * {@code /var/lib/dpkg}), read-only beneath, with the session's {@code upper} and {@code work} directories on its
     * disk, seen at the same {@code at} inside.
     */
    record Layer(String at, Path upper, Path work) {
        /**
         * The host's directories a session's own root overlays, those of them this host has: {@code /usr}, and dpkg's
         * database, so that {@code apt-get} and {@code dpkg} inside know what the host's {@code /usr} holds and record
         * what they add to it.
         */
        public static List<String> hostDirs() {
            return Stream.of("/usr", "/var/lib/dpkg")
                    .filter(d -> Files.isDirectory(Path.of(d))).toList();
        }

        public Layer {
            if (!at.startsWith("/") || at.contains("..") || at.contains(",") || at.contains(":")) {
                throw new IllegalArgumentException("a layer's place is an absolute path without '..', ',' or ':': " + at);
            }
        }

        /** Its name in the launcher's mount directory: {@code usr}, {@code var-lib-dpkg}. */
        public String name() {
            return at.substring(1).replace('/', '-');
        }
    }
}
