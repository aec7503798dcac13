package dev.crucible.session.workspace;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.os.Linux;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Where a {@link Workspace}'s paths start, and how the kernel resolves them from there: a directory of the host's
 * (the workspace: nothing below it is a link that is followed), or a running sandbox's own root (every link resolved
 * as the sandbox sees it, and never above that root). Either way one {@code openat2} resolves a whole path; no name
 * is ever looked up twice.
 */
public sealed interface FileRoot {
    /** An {@code O_PATH} descriptor of the directory paths start at; the caller closes it. */
    int open() throws IOException;

    /** The {@code openat2} resolve flags for a path below it. */
    long resolve();

    /** Whether a path's last component is followed when it is a symbolic link (reads and listings). */
    boolean followsLinks();

    /** How a path below it is shown in an error (a workspace path as given; a root path as the absolute one). */
    String shown(String path);

    /**
     * A host directory: every path stays beneath it ({@code RESOLVE_BENEATH}) and no symbolic link, of any kind, is
     * followed ({@code files-upload-*} hostile cases).
     */
    record Directory(Path dir) implements FileRoot {
        private static final int AT_FDCWD = -100;

        @Override
        public int open() throws IOException {
            return Linux.openat2(AT_FDCWD, dir.toString(), Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_CLOEXEC, 0,
                    Linux.RESOLVE_NO_SYMLINKS | Linux.RESOLVE_NO_MAGICLINKS);
        }

        @Override
        public long resolve() {
            return Linux.RESOLVE_STRICT;
        }

        @Override
        public boolean followsLinks() {
            return false;
        }

        @Override
        public String shown(String path) {
            return path;
        }
    }

    /**
     * A running sandbox's root, opened through {@code /proc/<pid>/root} of a process of its own: a path resolves as
     * {@code chroot} would resolve it inside ({@code RESOLVE_IN_ROOT}: an absolute link or {@code ..} stops at the
     * sandbox's root), through the sandbox's own mounts, and never through a magic link ({@code /proc/self/fd/…}).
     * Kernel file systems (proc, sysfs, cgroup…) are refused: they are the sandbox's state, not its files, and read
     * from here with the server's privileges they could say more than the sandbox itself may read.
     */
    record SandboxRoot(Opener opener) implements FileRoot {
        private static final Map<Long, String> KERNEL = Map.ofEntries(Map.entry(0x9fa0L, "proc"),
                Map.entry(0x62656572L, "sysfs"), Map.entry(0x27e0ebL, "cgroup"), Map.entry(0x63677270L, "cgroup2"),
                Map.entry(0x1cd1L, "devpts"), Map.entry(0x64626720L, "debugfs"), Map.entry(0x74726163L, "tracefs"),
                Map.entry(0x73636673L, "securityfs"), Map.entry(0xcafe4a11L, "bpf"), Map.entry(0x19800202L, "mqueue"),
                Map.entry(0x6165676cL, "pstore"), Map.entry(0x62656570L, "configfs"), Map.entry(0xde5e81e4L, "efivarfs"),
                Map.entry(0x42494e4dL, "binfmt_misc"), Map.entry(0xf97cff8cL, "selinuxfs"),
                Map.entry(0x65735546L, "fuse"), Map.entry(0x6e736673L, "nsfs"), Map.entry(0x50495045L, "pipefs"));

        /** Opens the sandbox's root now; fails when the sandbox does not run. */
        @FunctionalInterface
        public interface Opener {
            int open() throws IOException;
        }

        @Override
        public int open() throws IOException {
            return opener.open();
        }

        @Override
        public long resolve() {
            return Linux.RESOLVE_IN_ROOT | Linux.RESOLVE_NO_MAGICLINKS;
        }

        @Override
        public boolean followsLinks() {
            return true;
        }

        @Override
        public String shown(String path) {
            return "/" + path;
        }

        /**
         * Refuses a descriptor on a kernel file system.
         *
         * @throws RequestException {@code not_a_file}
         */
        static void refuseKernelFiles(int fd, String path) throws IOException {
            String kind = KERNEL.get(Linux.fileSystemType(fd) & 0xffffffffL);
            if (kind != null) {
                throw new RequestException(ErrorCode.NOT_A_FILE, "'/" + path + "' is on the sandbox's " + kind
                        + " file system: kernel state, not a file the files API reads or writes (run a command to see it)");
            }
        }
    }
}
