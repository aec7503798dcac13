package dev.crucible.session.workspace;

import dev.crucible.os.Linux;
import dev.crucible.sandbox.launch.LaunchCommand;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Gives the disk of a session with a root of its own ({@link WorkspaceDisk#createRooted}) to the host uids it runs as
 * now, when it last ran as others: a restart on another uid block, or a replica that adopts a dead one's session.
 *
 * <p>On that disk a host id is one of three things: {@code 0}, the server's own directories (the disk's top and
 * {@code r}), kept; an id of a root block ({@code ROOT_UID_BASE + uid * ROOT_BLOCK + k}, in-namespace id {@code k}),
 * given the same {@code k} in the new block; any other, the session's user (in-namespace 1000), given the new user's
 * uid. The map is the same whatever block a file was left in, and leaves a file already moved as it is, so a move cut
 * short by a crash is finished by the next one, on this block or a third. Nothing of the old block or the old user is
 * left: that server gives both to its next session of the same number.
 *
 * <p>The move is complete when the tops of the disk ({@code w} and each entry of {@code r}) are in the new block:
 * they are moved last, after everything below them, so {@link #moved} is a few {@code statx} calls on every load and
 * a walk only on the load that needs it. The walk goes by descriptors ({@code openat2} with {@code RESOLVE_STRICT},
 * {@code fchownat} with {@code AT_SYMLINK_NOFOLLOW}): a planted link is changed itself, never followed. A set-user-id
 * or set-group-id bit, which the kernel clears on any {@code chown} of a file, is given back; a file capability
 * ({@code security.capability}, which the kernel drops too) is not: it names the old block's root, and a file root
 * inside gave one loses it (less privilege, never more). Only while no sandbox runs for the session.
 */
public final class DiskOwners {
    private static final int AT_FDCWD = -100;
    private static final int DIR_FLAGS = Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_NOFOLLOW | Linux.O_CLOEXEC;

    private DiskOwners() {}

    /**
     * The host id that {@code id} (a file's owner or group on a session's disk) becomes for the session's user
     * {@code userUid} and root block {@code rootUid}: see the class comment.
     */
    static long owner(long id, int userUid, long rootUid) {
        if (id == 0) {
            return 0;
        }
        if (id >= LaunchCommand.ROOT_UID_BASE) {
            return rootUid + (id - LaunchCommand.ROOT_UID_BASE) % LaunchCommand.ROOT_BLOCK;
        }
        return userUid;
    }

    /**
     * Moves the session's disk mounted at {@code disk} to {@code userUid} and the block starting at {@code rootUid}
     * when it is not there yet (see the class comment); nothing when it is, or when there is no root block here
     * ({@code rootUid} -1: the session cannot run on this host anyway).
     *
     * @return whether anything was moved
     */
    public static boolean moveIfElsewhere(Path disk, int userUid, long rootUid) throws IOException {
        if (userUid < 0 || rootUid < 0) {
            return false;
        }
        int top = Linux.openat2(AT_FDCWD, disk.toAbsolutePath().toString(), DIR_FLAGS, 0,
                Linux.RESOLVE_NO_SYMLINKS | Linux.RESOLVE_NO_MAGICLINKS);
        try {
            List<String> tops = tops(top);
            boolean elsewhere = false;
            for (String t : tops) {
                elsewhere |= !inPlace(Linux.lstat(top, t), userUid, rootUid);
            }
            if (!elsewhere) {
                return false;
            }
            walk(top, tops, userUid, rootUid);
            for (String t : tops) { // last: the mark of a whole move
                move(top, t, userUid, rootUid);
            }
            return true;
        } finally {
            Linux.close(top);
        }
    }

    /** {@code w} and each entry of {@code r} that is there, relative to the disk. */
    private static List<String> tops(int top) throws Linux.ErrnoException {
        List<String> tops = new ArrayList<>();
        for (String name : Linux.listNames(top)) {
            if (name.equals("w")) {
                tops.add(name);
            } else if (name.equals("r") && isDirectory(top, name)) {
                int r = Linux.openat2(top, name, DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
                try {
                    Linux.listNames(r).forEach(entry -> tops.add("r/" + entry));
                } finally {
                    Linux.close(r);
                }
            }
        }
        return tops;
    }

    /** Moves everything below each of {@code tops}, iteratively (depth costs nothing), but the tops themselves. */
    private static void walk(int top, List<String> tops, int userUid, long rootUid) throws IOException {
        Deque<String> pending = new ArrayDeque<>();
        for (String t : tops) {
            if (isDirectory(top, t)) {
                pending.push(t);
            }
        }
        while (!pending.isEmpty()) {
            String path = pending.pop();
            int dir = Linux.openat2(top, path, DIR_FLAGS, 0, Linux.RESOLVE_STRICT);
            try {
                for (String name : Linux.listNames(dir)) {
                    if (move(dir, name, userUid, rootUid)) {
                        pending.push(path + "/" + name);
                    }
                }
            } finally {
                Linux.close(dir);
            }
        }
    }

    /** Moves {@code name} below {@code dir} itself (a link is not followed); whether it is a directory. */
    private static boolean move(int dir, String name, int userUid, long rootUid) throws IOException {
        Linux.Stat stat = Linux.lstat(dir, name);
        int type = stat.mode() & Linux.S_IFMT;
        if (!inPlace(stat, userUid, rootUid)) {
            Linux.fchownat(dir, name, (int) owner(stat.uid(), userUid, rootUid),
                    (int) owner(stat.gid(), userUid, rootUid), Linux.AT_SYMLINK_NOFOLLOW);
            if ((stat.mode() & 06000) != 0 && type != Linux.S_IFDIR && type != Linux.S_IFLNK) {
                int fd = Linux.openat2(dir, name, Linux.O_PATH | Linux.O_NOFOLLOW | Linux.O_CLOEXEC, 0,
                        Linux.RESOLVE_STRICT);
                try {
                    Linux.fchmodPath(fd, stat.mode() & 07777); // the set-id bits chown cleared
                } finally {
                    Linux.close(fd);
                }
            }
        }
        return type == Linux.S_IFDIR;
    }

    private static boolean inPlace(Linux.Stat stat, int userUid, long rootUid) {
        return owner(stat.uid(), userUid, rootUid) == stat.uid() && owner(stat.gid(), userUid, rootUid) == stat.gid();
    }

    private static boolean isDirectory(int dir, String name) throws Linux.ErrnoException {
        return (Linux.lstatMode(dir, name) & Linux.S_IFMT) == Linux.S_IFDIR;
    }
}
