package dev.crucible.sandbox.seccomp;

import dev.crucible.util.Once;
import dev.crucible.util.UserCache;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Builds the sandbox's seccomp program with libseccomp, called through the FFM API, and exports it as the raw
 * {@code struct sock_filter[]} that {@code bwrap --seccomp FD} loads.
 *
 * <p>The rules (see docs/sandbox-recipe.md, Seccomp): a deny-list (EPERM) of cross-process, mount/namespace, admin
 * and kernel-attack-surface calls (io_uring, bpf, userfaultfd, keyctl, perf), sockets of any family but AF_UNIX
 * (AF_VSOCK is not network-namespaced), {@code clone} with namespace flags, {@code clone3} forced to ENOSYS so glibc
 * falls back to the inspectable {@code clone}, and TIOCSTI/TIOCLINUX. libseccomp checks the architecture: a call
 * through another ABI (i386 {@code int 0x80}, x32), which the native rules would not match, kills the process.
 *
 * <p>A sandbox with egress loads a second program ({@link Socket#INET}) that also lets AF_INET and AF_INET6 sockets be
 * made: its network namespace has nothing but loopback and the server's proxy listener (see
 * {@code dev.crucible.os.NetNamespace}), and no capability in it. Every other rule is the same.
 *
 * <p>Public for the launcher, which writes {@link #shared} programs to files for {@code bwrap} and the zygotes; the
 * binding ({@link Libseccomp}) and the prefix ({@link BpfPrefix}) stay inside this package.
 */
public final class SeccompProgram {
    private static final int SCMP_ACT_ALLOW = 0x7fff0000;
    private static final int SCMP_ACT_KILL_PROCESS = 0x80000000;
    private static final int SCMP_FLTATR_ACT_BADARCH = 2;
    private static final int SCMP_CMP_NE = 1;
    private static final int SCMP_CMP_EQ = 4;
    private static final int SCMP_CMP_MASKED_EQ = 7;
    static final int EPERM = 1;
    static final int ENOSYS = 38;
    private static final int EAFNOSUPPORT = 97;
    private static final int AF_UNIX = 1;
    private static final int AF_INET = 2;
    private static final int AF_INET6 = 10;
    private static final int SCMP_CMP_GT = 6;

    static final List<String> DENIED = List.of(
            // cross-process
            "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
            // file systems and namespaces
            "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
            "fsmount", "fspick", "mount_setattr", "unshare", "setns", "name_to_handle_at", "open_by_handle_at",
            // administration
            "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
            "swapon", "swapoff", "syslog", "acct", "quotactl", "quotactl_fd", "lookup_dcookie", "vhangup",
            "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
            "iopl", "ioperm", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl", "modify_ldt",
            // kernel attack surface; io_uring can create sockets of any family
            "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
            "io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init",
            "mbind", "set_mempolicy", "migrate_pages", "move_pages", "get_mempolicy",
            // newer than some libseccomp tables: refused by name where known, else by the rule above the table
            "open_tree_attr", "set_mempolicy_home_node");

    /**
     * Denied names that may legitimately be unknown: legacy calls that some architectures never had, and calls newer
     * than an older libseccomp's table (those are refused anyway: they are above the highest number the table knows).
     * Any other denied name that does not resolve is a broken build and fails loudly.
     */
    static final Set<String> MAY_BE_UNKNOWN = Set.of("_sysctl", "iopl", "ioperm", "modify_ldt",
            "uselib", "ustat", "sysfs", "nfsservctl", "lookup_dcookie", "open_tree_attr", "set_mempolicy_home_node",
            "quotactl_fd", "mount_setattr", "vhangup");

    /** CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME. */
    private static final long[] CLONE_NAMESPACE_FLAGS = {
        0x00020000L, 0x02000000L, 0x04000000L, 0x08000000L, 0x10000000L, 0x20000000L, 0x40000000L, 0x00000080L};

    /** CLONE_PARENT: the new process gets the caller's parent. */
    private static final long CLONE_PARENT = 0x00008000L;

    private static final long TIOCSTI = 0x5412L;
    private static final long TIOCLINUX = 0x541CL;

    /** Which socket families a program lets a sandbox create, and for whom it is. */
    public enum Socket {
        /** AF_UNIX only: every sandbox without egress. */
        UNIX_ONLY,
        /** AF_UNIX, AF_INET and AF_INET6: a sandbox in a network namespace of the server's, with egress. */
        INET,
        /**
         * A zygote's own program (docs/zygote.md): AF_UNIX only, and every rule but those on the calls its children are
         * made with ({@link #ZYGOTE_NEEDS}: new namespaces, mounts, returning to its pid namespace); each child then
         * loads {@link #UNIX_ONLY} on top, before any code of a request runs.
         */
        ZYGOTE
    }

    /** The denied calls a zygote makes for its children, allowed in its own program. */
    static final Set<String> ZYGOTE_NEEDS = Set.of("mount", "umount2", "unshare", "setns");

    /** The programs of this process: they depend only on the host's libseccomp and these rules. */
    private static final Once<byte[]> SHARED = new Once<>(() -> cachedOrBuilt(UserCache.standard(), Socket.UNIX_ONLY));
    private static final Once<byte[]> SHARED_INET = new Once<>(() -> cachedOrBuilt(UserCache.standard(), Socket.INET));
    private static final Once<byte[]> SHARED_ZYGOTE = new Once<>(() -> cachedOrBuilt(UserCache.standard(),
            Socket.ZYGOTE));

    private SeccompProgram() {}

    /**
     * The program every sandbox of this process loads, built once (a copy: the caller may keep it).
     *
     * @throws IllegalStateException as {@link #build()}, every time it is asked for
     */
    public static byte[] shared() {
        return SHARED.get().clone();
    }

    /** As {@link #shared()}, for the given socket families. */
    public static byte[] shared(Socket sockets) {
        return (switch (sockets) {
            case UNIX_ONLY -> SHARED;
            case INET -> SHARED_INET;
            case ZYGOTE -> SHARED_ZYGOTE;
        }).get().clone();
    }

    /**
     * The program from {@code cache}, else {@link #build() built} and put there. Loading libseccomp through FFM
     * costs about 50 ms of CPU, a sixth of a `crucible run`. The cached program is keyed by what it is made of: the
     * bytes of this class, {@link Libseccomp} and {@link BpfPrefix} (the rules and the prefix) and the identity of the libseccomp file (real
     * path, inode, size, modification time), so a changed rule or an upgraded libseccomp builds it again. The cache
     * is trusted as far as the user is ({@link UserCache}: owned by this uid, writable by no one else): whoever can
     * write there can already change what this user runs.
     */
    static byte[] cachedOrBuilt(UserCache cache) {
        return cachedOrBuilt(cache, Socket.UNIX_ONLY);
    }

    /** As {@link #cachedOrBuilt(UserCache)}, for the given socket families (a cache file per variant). */
    static byte[] cachedOrBuilt(UserCache cache, Socket sockets) {
        String name = cacheName();
        if (name != null && sockets != Socket.UNIX_ONLY) {
            name = sockets.name().toLowerCase(Locale.ROOT) + "-" + name;
        }
        if (name != null) {
            byte[] cached = cache.read(name, BpfPrefix.MAX_INSTRUCTIONS * 8).filter(BpfPrefix::wellFormed).orElse(null);
            if (cached != null) {
                return cached;
            }
        }
        byte[] program = build(sockets);
        if (name != null) {
            cache.write(name, program);
        }
        return program;
    }

    /** The cache file's name for this libseccomp and these rules, or null when either cannot be identified. */
    static String cacheName() {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            for (String part : List.of("SeccompProgram.class", "Libseccomp.class", "BpfPrefix.class")) {
                try (InputStream code = SeccompProgram.class.getResourceAsStream(part)) {
                    if (code == null) {
                        return null;
                    }
                    digest.update(code.readAllBytes());
                }
            }
            Path library = Path.of(Libseccomp.path()).toRealPath();
            BasicFileAttributes a = Files.readAttributes(library, BasicFileAttributes.class);
            digest.update((library + "\0" + a.fileKey() + "\0" + a.size() + "\0" + a.lastModifiedTime().toMillis()
                    + "\0" + System.getProperty("os.arch")).getBytes(StandardCharsets.UTF_8));
            return "seccomp-" + HexFormat.of().formatHex(digest.digest(), 0, 16) + ".bpf";
        } catch (IOException | NoSuchAlgorithmException | RuntimeException e) {
            return null;
        }
    }

    /**
     * Produces the BPF program.
     *
     * @return the exported program, a multiple of 8 bytes
     * @throws IllegalStateException when libseccomp cannot be loaded or refuses a rule
     */
    static byte[] build() {
        return build(Socket.UNIX_ONLY);
    }

    /** As {@link #build()}, for the given socket families. */
    static byte[] build(Socket sockets) {
        Linker linker = Linker.nativeLinker();
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup seccomp = SymbolLookup.libraryLookup(Libseccomp.path(), arena);
            SymbolLookup libc = linker.defaultLookup();
            var lib = new Libseccomp(linker, seccomp, libc);
            MemorySegment ctx = (MemorySegment) lib.init.invokeExact(SCMP_ACT_ALLOW);
            if (ctx.equals(MemorySegment.NULL)) {
                throw new IllegalStateException("seccomp_init failed");
            }
            try {
                Libseccomp.check("seccomp_attr_set", (int) lib.attrSet.invokeExact(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS));
                for (String name : DENIED) {
                    if (sockets != Socket.ZYGOTE || !ZYGOTE_NEEDS.contains(name)) {
                        lib.rule(arena, ctx, errno(EPERM), name);
                    }
                }
                if (sockets == Socket.INET) {
                    // every family but AF_UNIX (1), AF_INET (2), AF_INET6 (10); one comparison of an argument a rule
                    lib.rule(arena, ctx, errno(EAFNOSUPPORT), "socket", cmp(0, SCMP_CMP_EQ, 0, 0));
                    for (int family = AF_INET + 1; family < AF_INET6; family++) {
                        lib.rule(arena, ctx, errno(EAFNOSUPPORT), "socket", cmp(0, SCMP_CMP_EQ, family, 0));
                    }
                    lib.rule(arena, ctx, errno(EAFNOSUPPORT), "socket", cmp(0, SCMP_CMP_GT, AF_INET6, 0));
                } else {
                    lib.rule(arena, ctx, errno(EAFNOSUPPORT), "socket", cmp(0, SCMP_CMP_NE, AF_UNIX, 0));
                }
                lib.rule(arena, ctx, errno(EAFNOSUPPORT), "socketpair", cmp(0, SCMP_CMP_NE, AF_UNIX, 0));
                for (long flag : CLONE_NAMESPACE_FLAGS) { // a zygote's children unshare after a plain fork
                    lib.rule(arena, ctx, errno(EPERM), "clone", cmp(0, SCMP_CMP_MASKED_EQ, flag, flag));
                }
                // a process whose parent is its parent's parent: in a zygote's child, the zygote, outside the
                // child's namespace; its zombie would be the zygote's to reap (docs/zygote.md)
                lib.rule(arena, ctx, errno(EPERM), "clone", cmp(0, SCMP_CMP_MASKED_EQ, CLONE_PARENT, CLONE_PARENT));
                lib.rule(arena, ctx, errno(ENOSYS), "clone3");
                lib.rule(arena, ctx, errno(EPERM), "ioctl", cmp(1, SCMP_CMP_MASKED_EQ, 0xFFFFFFFFL, TIOCSTI));
                lib.rule(arena, ctx, errno(EPERM), "ioctl", cmp(1, SCMP_CMP_MASKED_EQ, 0xFFFFFFFFL, TIOCLINUX));
                return BpfPrefix.prefix(lib.highestKnown(), lib.number(arena, "personality"), lib.export(arena, ctx));
            } finally {
                lib.release.invokeExact(ctx);
            }
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cannot build the seccomp program with libseccomp: " + t.getMessage(), t);
        }
    }

    /** The seccomp return (and libseccomp action) that fails a call with {@code code} as its errno. */
    static int errno(int code) {
        return 0x00050000 | (code & 0xffff);
    }

    private static long[] cmp(int arg, int op, long a, long b) {
        return new long[] {arg, op, a, b};
    }
}
