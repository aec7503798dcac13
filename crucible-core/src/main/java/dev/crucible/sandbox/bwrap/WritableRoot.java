package dev.crucible.sandbox.bwrap;

import dev.crucible.os.Linux;
import dev.crucible.os.Linux.ErrnoException;
import dev.crucible.sandbox.SandboxRoot;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Hands a {@link SandboxRoot.Writable} tree to the host uid a run becomes, so that the run's uid 0 (that host uid
 * mapped into its user namespace, with no capability) owns every file and may change it. The tree was written by
 * earlier runs of the same build, so it is walked as hostile: every directory is opened below the top with
 * {@code openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)} and every entry changed with {@code fchownat} and
 * {@code AT_SYMLINK_NOFOLLOW} on its parent's descriptor, so a planted link is changed itself, never followed.
 */
final class WritableRoot {
    private static final int AT_FDCWD = -100;
    private static final int DIR_FLAGS = Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_NOFOLLOW | Linux.O_CLOEXEC;

    private WritableRoot() {}

    /** Gives {@code top} and everything below it to {@code uid} (group {@code uid}), iteratively (depth costs nothing). */
    static void giveTo(Path top, int uid) throws IOException {
        int topFd = Linux.openat2(AT_FDCWD, top.toAbsolutePath().toString(), DIR_FLAGS, 0,
                Linux.RESOLVE_NO_SYMLINKS | Linux.RESOLVE_NO_MAGICLINKS);
        try {
            Linux.fchownat(topFd, "", uid, uid, Linux.AT_EMPTY_PATH);
            Deque<String> pending = new ArrayDeque<>();
            pending.push("");
            while (!pending.isEmpty()) {
                String path = pending.pop();
                int dirFd = path.isEmpty() ? topFd : Linux.openat2(topFd, path, DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
                try {
                    for (String name : Linux.listNames(dirFd)) {
                        Linux.fchownat(dirFd, name, uid, uid, Linux.AT_SYMLINK_NOFOLLOW);
                        if (isDirectory(dirFd, name)) {
                            pending.push(path.isEmpty() ? name : path + "/" + name);
                        }
                    }
                } finally {
                    if (dirFd != topFd) {
                        Linux.close(dirFd);
                    }
                }
            }
        } finally {
            Linux.close(topFd);
        }
    }

    private static boolean isDirectory(int dirFd, String name) throws ErrnoException {
        return (Linux.lstatMode(dirFd, name) & Linux.S_IFMT) == Linux.S_IFDIR;
    }
}
