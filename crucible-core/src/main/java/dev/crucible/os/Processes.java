package dev.crucible.os;

import static dev.crucible.os.Libc.CALL_STATE;
import static dev.crucible.os.Libc.check;
import static dev.crucible.os.Libc.errno;
import static dev.crucible.os.Libc.errnoIn;
import static dev.crucible.os.Libc.syscall;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongPredicate;

/**
 * Signals to processes by pid, through the FFM API: a pid read from a list ({@code cgroup.procs}, a process's
 * descendants) is pinned by a pidfd before the caller checks it is still the process meant, so that a pid reused
 * meanwhile by another process is never signalled (see docs/sandbox-recipe.md, Teardown).
 */
public final class Processes {
    private static final long SYS_PIDFD_SEND_SIGNAL = 424; // generic numbers: x86_64 and aarch64 alike
    private static final long SYS_PIDFD_OPEN = 434;
    /** {@code syscall} with four long arguments, for the calls libc has no wrapper for on every distribution. */
    private static final MethodHandle SYSCALL_LONGS = syscall(
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle KILL = errno("kill", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));

    private static final MethodHandle SETPRIORITY = errno("setpriority",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));

    private Processes() {}

    /**
     * Lowers the calling platform thread's scheduling priority to {@code nice} (1-19; Linux keeps a nice value per
     * thread, and the processes this thread starts inherit it). Any user may lower its own priority; a failure is
     * ignored (the thread then runs as before).
     */
    public static void lowerThisThreadsPriority(int nice) {
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) SETPRIORITY.invokeExact(arena.allocate(CALL_STATE), 0, 0, nice); // PRIO_PROCESS, self
        } catch (Throwable t) {
            // as documented: the thread keeps its priority
        }
    }

    /**
     * Sends {@code signal} to the process {@code pid} names, but only if {@code stillMeant} says it is the process
     * meant (for example, still a member of a sandbox's cgroup), checked <em>after</em> a pidfd pins the process: a
     * pid read from a list can be reused by another process before it is signalled, a pidfd cannot. If the pinned
     * process ends after the check, the signal fails with ESRCH rather than reach the pid's next owner. Kernels
     * without pidfds (before 5.3) get the check and a plain {@code kill}.
     *
     * @return whether the signal was delivered
     */
    public static boolean signalIf(long pid, int signal, LongPredicate stillMeant) {
        long fd = longCall(SYS_PIDFD_OPEN, pid, 0, 0, 0);
        if (fd < 0) {
            return -fd == Linux.ENOSYS && stillMeant.test(pid) && kill(pid, signal);
        }
        try {
            return stillMeant.test(pid) && longCall(SYS_PIDFD_SEND_SIGNAL, fd, signal, 0, 0) == 0;
        } finally {
            Linux.close((int) fd);
        }
    }

    /**
     * Opens {@code /proc/<pid>/<entry>} ({@code root}, {@code cwd}…) with {@code O_PATH}, but only of the process
     * {@code stillMeant} accepts, checked after a pidfd pins it, and only if it still runs once the entry is open: a pid
     * reused between the check and the open is caught by the pinned process having ended.
     *
     * @return the descriptor (the caller closes it)
     * @throws Linux.ErrnoException ESRCH when the process is not (or no longer) the one meant
     */
    public static int openIf(long pid, String entry, LongPredicate stillMeant)
            throws Linux.ErrnoException {
        long pidfd = longCall(SYS_PIDFD_OPEN, pid, 0, 0, 0);
        if (pidfd < 0) {
            throw new Linux.ErrnoException("pidfd_open", Long.toString(pid), (int) -pidfd);
        }
        try {
            if (!stillMeant.test(pid)) {
                throw new Linux.ErrnoException("openIf", Long.toString(pid), Linux.ESRCH);
            }
            int fd = openAsOwner(pid, "/proc/" + pid + "/" + entry);
            if (longCall(SYS_PIDFD_SEND_SIGNAL, pidfd, 0, 0, 0) != 0) {
                Linux.close(fd);
                throw new Linux.ErrnoException("openIf", Long.toString(pid), Linux.ESRCH);
            }
            return fd;
        } finally {
            Linux.close((int) pidfd);
        }
    }

    /**
     * Opens a process's {@code /proc} entry: as this thread is, or, refused that (a server without {@code
     * CAP_SYS_PTRACE}, in a container), with the process's own uid and gid as this thread's file-system ids for the
     * moment of the open, which the kernel's ptrace access check accepts for a process of one uid throughout. The
     * thread's ids are put back before it returns.
     */
    private static int openAsOwner(long pid, String path) throws Linux.ErrnoException {
        int flags = Linux.O_PATH | Linux.O_DIRECTORY | Linux.O_CLOEXEC;
        try {
            return Linux.openat2(-100, path, flags, 0, 0);
        } catch (Linux.ErrnoException e) {
            if (e.errno() != 13 && e.errno() != 1) {
                throw e;
            }
            long[] ids = ids(pid);
            if (ids == null) {
                throw e;
            }
            int uid = Linux.fsuid(); // root's on the files threads, whose gid is root's too
            Linux.setfsids((int) ids[0], (int) ids[1]);
            try {
                return Linux.openat2(-100, path, flags, 0, 0);
            } finally {
                Linux.setfsids(uid, uid);
                if (Linux.fsuid() != uid) {
                    throw new IllegalStateException("cannot restore the file-system uid of " + Thread.currentThread());
                }
            }
        }
    }

    /** The effective uid and gid in {@code /proc/<pid>/status}, or null. */
    private static long[] ids(long pid) {
        long uid = -1;
        long gid = -1;
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid),
                    "status"))) {
                if (line.startsWith("Uid:")) {
                    uid = Long.parseLong(line.substring(4).strip().split("\\s+")[1]);
                } else if (line.startsWith("Gid:")) {
                    gid = Long.parseLong(line.substring(4).strip().split("\\s+")[1]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return uid < 0 || gid < 0 ? null : new long[] {uid, gid};
    }

    /** A raw system call; a failure is returned as {@code -errno}. */
    private static long longCall(long number, long a, long b, long c, long d) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            long r = (long) SYSCALL_LONGS.invokeExact(state, number, a, b, c, d);
            return r < 0 ? -errnoIn(state) : r;
        } catch (Throwable t) {
            throw new IllegalStateException("syscall " + number, t);
        }
    }

    /** Sends {@code signal} to {@code pid}; false when the process has gone. */
    public static boolean kill(long pid, int signal) {
        try {
            check("kill", null, (state, arena) -> (int) KILL.invokeExact(state, (int) pid, signal));
            return true;
        } catch (Linux.ErrnoException e) {
            return false;
        }
    }
}
