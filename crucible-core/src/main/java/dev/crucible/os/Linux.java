package dev.crucible.os;

import static dev.crucible.os.Libc.CALL_STATE;
import static dev.crucible.os.Libc.check;
import static dev.crucible.os.Libc.errno;
import static dev.crucible.os.Libc.errnoIn;
import static dev.crucible.os.Libc.plain;
import static dev.crucible.os.Libc.syscall;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The few Linux file system calls the JDK does not offer, through the FFM API, and the kernel's numbers they take:
 * {@code openat2} with resolve flags (the host side of file transfer never follows a path the sandbox could have
 * planted), the {@code *at} calls relative to a directory descriptor ({@code statx} and {@code readdir} included, so
 * names travel as UTF-8 bytes whatever the locale), {@code flock}, {@code fallocate}, and {@code setfsuid}/{@code
 * setfsgid} (file access as a sandbox's uid). Signals to other processes are {@link Processes}'. Each call that fails
 * throws an {@link IOException} carrying errno.
 */
public final class Linux {
    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 1;
    public static final int O_CREAT = 0100;
    public static final int O_EXCL = 0200;
    public static final int O_NOCTTY = 0400;
    public static final int O_NONBLOCK = 04000;
    public static final int O_DIRECTORY = 0200000;
    public static final int O_NOFOLLOW = 0400000;
    public static final int O_CLOEXEC = 02000000;
    public static final int O_PATH = 010000000;
    public static final long RESOLVE_NO_MAGICLINKS = 0x02;
    public static final long RESOLVE_NO_SYMLINKS = 0x04;
    public static final long RESOLVE_BENEATH = 0x08;
    /** The directory is the root for every component, symbolic links included: nothing resolves above it. */
    public static final long RESOLVE_IN_ROOT = 0x10;
    /** Every component stays below the directory, and no symbolic link of any kind is followed. */
    public static final long RESOLVE_STRICT = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    public static final int AT_REMOVEDIR = 0x200;
    public static final int AT_SYMLINK_NOFOLLOW = 0x100;
    public static final int AT_EMPTY_PATH = 0x1000;
    public static final int S_IFMT = 0170000;
    public static final int S_IFDIR = 0040000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFLNK = 0120000;
    public static final int ENOENT = 2;
    public static final int EEXIST = 17;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int ENOTEMPTY = 39;
    public static final int ELOOP = 40;
    public static final int EXDEV = 18;
    public static final int ENXIO = 6;
    public static final int EAGAIN = 11;
    public static final int ENAMETOOLONG = 36;
    public static final int ENOSPC = 28;
    public static final int EOPNOTSUPP = 95;
    public static final int EDQUOT = 122;
    /** {@code fallocate} mode: blocks past the end of the file, its size unchanged. */
    public static final int FALLOC_FL_KEEP_SIZE = 1;

    private static final long SYS_OPENAT2 = 437; // x86_64 and aarch64 alike (the new generic numbers)
    /** {@code syscall(SYS_openat2, dirfd, path, how, size)}. */
    private static final MethodHandle SYSCALL4 = syscall(
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    public static final int ESRCH = 3;
    public static final int ENOSYS = 38;
    private static final MethodHandle MKDIRAT = errno("mkdirat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle UNLINKAT = errno("unlinkat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle RENAMEAT = errno("renameat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle SYMLINKAT = errno("symlinkat",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle LINKAT = errno("linkat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle STATX = errno("statx",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS));
    private static final int STATX_TYPE_AND_MODE = 0x3;
    private static final int STATX_OWNERS = 0x18; // STATX_UID | STATX_GID
    private static final long STATX_UID_OFFSET = 20; // stx_uid, then stx_gid (u32 each)
    private static final long STATX_SIZE = 256;
    private static final long STATX_MODE_OFFSET = 28; // struct statx is the same on every architecture
    private static final int STATX_SIZE_MASK = 0x200;
    private static final int STATX_MTIME = 0x40;
    private static final long STATX_SIZE_OFFSET = 40;
    private static final long STATX_MTIME_OFFSET = 112; // struct statx_timestamp: tv_sec (s64), then tv_nsec (u32)
    private static final MethodHandle FCHOWNAT = errno("fchownat",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle READLINKAT = errno("readlinkat",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    private static final int PATH_MAX = 4096;
    private static final MethodHandle FDOPENDIR = errno("fdopendir", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    private static final MethodHandle READDIR = plain("readdir", FunctionDescriptor.of(ADDRESS, ADDRESS));
    private static final MethodHandle CLOSEDIR = plain("closedir", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    /** {@code d_name} in glibc's and musl's {@code struct dirent} on 64-bit targets (after ino, off, reclen, type). */
    private static final long DIRENT_NAME_OFFSET = 19;
    private static final long DIRENT_NAME_MAX = 256;
    private static final MethodHandle FLOCK = errno("flock", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CHMOD = errno("chmod", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle CLOSE = plain("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle SETFSUID = plain("setfsuid", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle SETFSGID = plain("setfsgid", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle FALLOCATE = errno("fallocate",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final int AT_FDCWD = -100;
    private static final MethodHandle FSTATFS = errno("fstatfs", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    /** {@code struct statfs} is 120 bytes on 64-bit targets; {@code f_type} is its first word. */
    private static final long STATFS_SIZE = 120;

    private Linux() {}

    /** The magic number of the file system {@code fd} (an {@code O_PATH} descriptor will do) lies on. */
    public static long fileSystemType(int fd) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(STATFS_SIZE, 8);
            check("fstatfs", null, (state, a) -> (int) FSTATFS.invokeExact(state, fd, buf));
            return buf.get(JAVA_LONG, 0);
        }
    }

    /** A failed system call: {@link #errno()} says why. */
    public static final class ErrnoException extends IOException {
        private final int errno;

        ErrnoException(String call, String path, int errno) {
            super(call + (path == null ? "" : " " + path) + ": errno " + errno);
            this.errno = errno;
        }

        public int errno() {
            return errno;
        }
    }

    /**
     * {@code openat2(dirfd, path, {flags, mode, resolve})}: opens {@code path} below {@code dirfd} with the kernel
     * resolving every component under {@code resolve} in one atomic step.
     */
    public static int openat2(int dirfd, String path, int flags, int mode, long resolve) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment how = arena.allocate(24, 8);
            how.set(JAVA_LONG, 0, flags & 0xffffffffL);
            how.set(JAVA_LONG, 8, mode);
            how.set(JAVA_LONG, 16, resolve);
            MemorySegment state = arena.allocate(CALL_STATE);
            long fd = (long) SYSCALL4.invokeExact(state, SYS_OPENAT2, (long) dirfd, arena.allocateFrom(path), how, 24L);
            if (fd < 0) {
                throw new ErrnoException("openat2", path, errnoIn(state));
            }
            return (int) fd;
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("openat2", t);
        }
    }

    public static void mkdirat(int dirfd, String name, int mode) throws ErrnoException {
        check("mkdirat", name, (state, arena) -> (int) MKDIRAT.invokeExact(state, dirfd, arena.allocateFrom(name), mode));
    }

    /**
     * Changes the mode of exactly the file an open descriptor (O_PATH included) refers to, through its magic link
     * in {@code /proc/self/fd}: never a path someone could swap. The caller's file-system uid must own it.
     */
    public static void fchmodPath(int fd, int mode) throws ErrnoException {
        String link = "/proc/self/fd/" + fd;
        check("chmod", link, (state, arena) -> (int) CHMOD.invokeExact(state, arena.allocateFrom(link), mode));
    }

    public static void unlinkat(int dirfd, String name, int flags) throws ErrnoException {
        check("unlinkat", name, (state, arena) -> (int) UNLINKAT.invokeExact(state, dirfd, arena.allocateFrom(name), flags));
    }

    public static void renameat(int fromDir, String from, int toDir, String to) throws ErrnoException {
        check("renameat", to, (state, arena) -> (int) RENAMEAT.invokeExact(state, fromDir, arena.allocateFrom(from), toDir,
                arena.allocateFrom(to)));
    }

    /**
     * {@code symlinkat(target, dirfd, name)}: creates the symbolic link {@code name} below {@code dirfd} holding
     * {@code target} as text; the target is never resolved, and an existing {@code name} fails with EEXIST.
     */
    public static void symlinkat(String target, int dirfd, String name) throws ErrnoException {
        check("symlinkat", name, (state, arena) -> (int) SYMLINKAT.invokeExact(state, arena.allocateFrom(target), dirfd,
                arena.allocateFrom(name)));
    }

    /**
     * {@code linkat(fromDir, from, toDir, to, flags)}: a new hard link {@code to} below {@code toDir} for the file
     * {@code from} names below {@code fromDir}. Without {@code AT_SYMLINK_FOLLOW} in {@code flags} (the only flag
     * there is) a symbolic link {@code from} is linked itself, never followed.
     */
    public static void linkat(int fromDir, String from, int toDir, String to, int flags) throws ErrnoException {
        check("linkat", to, (state, arena) -> (int) LINKAT.invokeExact(state, fromDir, arena.allocateFrom(from), toDir,
                arena.allocateFrom(to), flags));
    }

    /**
     * The {@code st_mode} (type and permission bits) of {@code name} below {@code dirfd}, never following a symlink
     * ({@code statx} with {@code AT_SYMLINK_NOFOLLOW}). The name is passed as UTF-8 bytes whatever the JVM's
     * {@code sun.jnu.encoding}: a {@link java.nio.file.Path} cannot name a non-ASCII file under the POSIX locale.
     */
    public static int lstatMode(int dirfd, String name) throws ErrnoException {
        return lstat(dirfd, name).mode();
    }

    /**
     * The type and permission bits ({@code st_mode}), the size in bytes, the modification time (seconds and
     * nanoseconds since the epoch) and the owner and group (host ids, unsigned) of a file, as {@link #lstat} gives them.
     */
    public record Stat(int mode, long size, long mtimeSeconds, int mtimeNanos, long uid, long gid) {}

    /**
     * The {@code st_mode} and {@code st_size} of {@code name} below {@code dirfd}, never following a symlink (one
     * {@code statx} with {@code AT_SYMLINK_NOFOLLOW}; the name passed as UTF-8 bytes, as {@link #lstatMode}).
     */
    public static Stat lstat(int dirfd, String name) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(STATX_SIZE, 8);
            check("statx", name, (state, a) -> (int) STATX.invokeExact(state, dirfd, a.allocateFrom(name),
                    AT_SYMLINK_NOFOLLOW, STATX_TYPE_AND_MODE | STATX_OWNERS | STATX_SIZE_MASK | STATX_MTIME, buffer));
            return new Stat(Short.toUnsignedInt(buffer.get(JAVA_SHORT, STATX_MODE_OFFSET)),
                    buffer.get(JAVA_LONG, STATX_SIZE_OFFSET), buffer.get(JAVA_LONG, STATX_MTIME_OFFSET),
                    buffer.get(JAVA_INT, STATX_MTIME_OFFSET + 8),
                    Integer.toUnsignedLong(buffer.get(JAVA_INT, STATX_UID_OFFSET)),
                    Integer.toUnsignedLong(buffer.get(JAVA_INT, STATX_UID_OFFSET + 4)));
        }
    }

    /**
     * {@code fchownat(dirfd, name, uid, gid, flags)}; with {@link #AT_SYMLINK_NOFOLLOW} a symbolic link {@code name}
     * is changed itself, never followed, and with {@link #AT_EMPTY_PATH} and an empty name {@code dirfd} itself is.
     */
    public static void fchownat(int dirfd, String name, int uid, int gid, int flags) throws ErrnoException {
        check("fchownat", name, (state, arena) -> (int) FCHOWNAT.invokeExact(state, dirfd, arena.allocateFrom(name), uid,
                gid, flags));
    }

    /** The text of the symbolic link {@code name} below {@code dirfd} (decoded as UTF-8), never resolved. */
    public static String readlinkat(int dirfd, String name) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(PATH_MAX);
            MemorySegment state = arena.allocate(CALL_STATE);
            long n = (long) READLINKAT.invokeExact(state, dirfd, arena.allocateFrom(name), buffer, (long) PATH_MAX);
            if (n < 0) {
                throw new ErrnoException("readlinkat", name, errnoIn(state));
            }
            return new String(buffer.asSlice(0, n).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("readlinkat", t);
        }
    }

    /**
     * The names in the directory {@code dirfd} (an {@code O_PATH} descriptor will do), without {@code .} and
     * {@code ..}, decoded as UTF-8: the directory is reopened as itself ({@code "."} below it) for
     * {@code fdopendir}/{@code readdir}, so no path is resolved again.
     */
    public static List<String> listNames(int dirfd) throws ErrnoException {
        int fd = openat2(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_STRICT);
        MemorySegment dir;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            dir = (MemorySegment) FDOPENDIR.invokeExact(state, fd);
            if (dir.equals(MemorySegment.NULL)) {
                int errno = errnoIn(state);
                close(fd);
                throw new ErrnoException("fdopendir", null, errno);
            }
        } catch (ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fdopendir", t);
        }
        try {
            return readAll(dir);
        } finally {
            closeDir(dir);
        }
    }

    /** Every name {@code readdir} gives until it answers null (the end; its only error is a bad stream). */
    private static List<String> readAll(MemorySegment dir) {
        List<String> names = new ArrayList<>();
        try {
            while (true) {
                MemorySegment entry = (MemorySegment) READDIR.invokeExact(dir);
                if (entry.equals(MemorySegment.NULL)) {
                    return names;
                }
                String name = entry.reinterpret(DIRENT_NAME_OFFSET + DIRENT_NAME_MAX).getString(DIRENT_NAME_OFFSET);
                if (!name.equals(".") && !name.equals("..")) {
                    names.add(name);
                }
            }
        } catch (Throwable t) {
            throw new IllegalStateException("readdir", t);
        }
    }

    private static void closeDir(MemorySegment dir) {
        try {
            int ignored = (int) CLOSEDIR.invokeExact(dir);
        } catch (Throwable t) {
            throw new IllegalStateException("closedir", t);
        }
    }

    public static final int O_RDWR = 2;
    public static final int EWOULDBLOCK = 11;
    private static final int LOCK_EX = 2;
    private static final int LOCK_NB = 4;

    /**
     * {@code flock(fd, LOCK_EX | LOCK_NB)}: an exclusive lock of the open file description, released when its last
     * descriptor closes (the process's death included). Unlike a POSIX record lock, closing another descriptor of the
     * same file does not release it.
     *
     * @return false when someone else holds it
     */
    public static boolean tryLockExclusive(int fd) throws ErrnoException {
        try {
            check("flock", null, (state, arena) -> (int) FLOCK.invokeExact(state, fd, LOCK_EX | LOCK_NB));
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == EWOULDBLOCK) {
                return false;
            }
            throw e;
        }
    }

    /** {@code flock(fd, LOCK_EX)}: waits for, then takes, an exclusive lock (see {@link #tryLockExclusive}). */
    public static void lockExclusive(int fd) throws ErrnoException {
        check("flock", null, (state, arena) -> (int) FLOCK.invokeExact(state, fd, LOCK_EX));
    }

    /**
     * {@code fallocate(file, mode, offset, length)}: the file system gives {@code file} its blocks now (unwritten:
     * no data is written), so later writes within them never find it full. {@code file} itself is opened without
     * following a symbolic link.
     *
     * @throws ErrnoException {@link #ENOSPC} or {@link #EDQUOT} when there is not room, {@link #EOPNOTSUPP} on a file
     *     system without it
     */
    public static void fallocate(Path file, int mode, long offset, long length) throws ErrnoException {
        int fd = openat2(AT_FDCWD, file.toString(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, 0);
        try {
            check("fallocate", file.toString(), (state, arena) -> (int) FALLOCATE.invokeExact(state, fd, mode, offset,
                    length));
        } finally {
            close(fd);
        }
    }

    public static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException("close", t);
        }
    }

    /**
     * Sets this thread's file-system uid and gid (and returns the previous uid). Only for a platform thread that
     * restores them before doing anything else: a virtual thread may move to another carrier between two calls.
     */
    public static int setfsids(int uid, int gid) {
        try {
            int ignored = (int) SETFSGID.invokeExact(gid);
            return (int) SETFSUID.invokeExact(uid);
        } catch (Throwable t) {
            throw new IllegalStateException("setfsuid", t);
        }
    }

    /** This thread's file-system uid (setfsuid with an invalid id changes nothing and returns the current one). */
    public static int fsuid() {
        try {
            return (int) SETFSUID.invokeExact(-1);
        } catch (Throwable t) {
            throw new IllegalStateException("setfsuid", t);
        }
    }
}
