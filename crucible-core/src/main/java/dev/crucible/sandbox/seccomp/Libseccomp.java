package dev.crucible.sandbox.seccomp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The handful of libseccomp (and libc) functions {@link SeccompProgram} builds with, bound through the FFM API: a
 * rule by system call name, the native numbers libseccomp knows, and the export of the program through a memfd.
 */
final class Libseccomp {
    final MethodHandle init;
    final MethodHandle attrSet;
    final MethodHandle resolve;
    final MethodHandle ruleAddArray;
    final MethodHandle exportBpf;
    final MethodHandle release;
    final MethodHandle memfdCreate;
    final MethodHandle close;
    final MethodHandle resolveNum;

    Libseccomp(Linker linker, SymbolLookup seccomp, SymbolLookup libc) {
        var ptr = ValueLayout.ADDRESS;
        var i32 = ValueLayout.JAVA_INT;
        init = linker.downcallHandle(find(seccomp, "seccomp_init"), FunctionDescriptor.of(ptr, i32));
        attrSet = linker.downcallHandle(find(seccomp, "seccomp_attr_set"), FunctionDescriptor.of(i32, ptr, i32, i32));
        resolve = linker.downcallHandle(find(seccomp, "seccomp_syscall_resolve_name"), FunctionDescriptor.of(i32, ptr));
        ruleAddArray = linker.downcallHandle(
                find(seccomp, "seccomp_rule_add_array"), FunctionDescriptor.of(i32, ptr, i32, i32, i32, ptr));
        exportBpf = linker.downcallHandle(find(seccomp, "seccomp_export_bpf"), FunctionDescriptor.of(i32, ptr, i32));
        release = linker.downcallHandle(find(seccomp, "seccomp_release"), FunctionDescriptor.ofVoid(ptr));
        memfdCreate = linker.downcallHandle(find(libc, "memfd_create"), FunctionDescriptor.of(i32, ptr, i32));
        close = linker.downcallHandle(find(libc, "close"), FunctionDescriptor.of(i32, i32));
        resolveNum = linker.downcallHandle(find(seccomp, "seccomp_syscall_resolve_num_arch"),
                FunctionDescriptor.of(ptr, i32, i32));
    }

    /** The native number of a system call, or -1. */
    int number(Arena arena, String name) throws Throwable {
        return (int) resolve.invokeExact(arena.allocateFrom(name));
    }

    /** The highest native system call number libseccomp has a name for. */
    int highestKnown() throws Throwable {
        int highest = -1;
        for (int nr = 0; nr < 1024; nr++) {
            MemorySegment name = (MemorySegment) resolveNum.invokeExact(0, nr); // 0: SCMP_ARCH_NATIVE
            if (!name.equals(MemorySegment.NULL)) {
                highest = nr; // the name is a few bytes from libseccomp's heap: left, once per start
            }
        }
        return highest;
    }

    private static MemorySegment find(SymbolLookup lookup, String name) {
        return lookup.find(name).orElseThrow(() -> new IllegalStateException("symbol not found: " + name));
    }

    void rule(Arena arena, MemorySegment ctx, int action, String syscall, long[]... comparisons) throws Throwable {
        int nr = (int) resolve.invokeExact(arena.allocateFrom(syscall));
        if (nr < 0) {
            if (SeccompProgram.MAY_BE_UNKNOWN.contains(syscall)) {
                return; // not on this architecture, or newer than the table: above highestKnown(), refused there
            }
            throw new IllegalStateException("libseccomp does not know the system call '" + syscall + "' that the"
                    + " sandbox must refuse; install a libseccomp that knows it (apt-get install libseccomp2)");
        }
        // struct scmp_arg_cmp { unsigned int arg; enum scmp_compare op; uint64 datum_a; uint64 datum_b; } = 24 bytes
        MemorySegment array = arena.allocate(24L * Math.max(1, comparisons.length), 8);
        for (int i = 0; i < comparisons.length; i++) {
            long[] c = comparisons[i];
            long base = 24L * i;
            array.set(ValueLayout.JAVA_INT, base, (int) c[0]);
            array.set(ValueLayout.JAVA_INT, base + 4, (int) c[1]);
            array.set(ValueLayout.JAVA_LONG, base + 8, c[2]);
            array.set(ValueLayout.JAVA_LONG, base + 16, c[3]);
        }
        int rc = (int) ruleAddArray.invokeExact(ctx, action, nr, comparisons.length, array);
        check("seccomp_rule_add(" + syscall + ")", rc);
    }

    byte[] export(Arena arena, MemorySegment ctx) throws Throwable {
        int fd = (int) memfdCreate.invokeExact(arena.allocateFrom("crucible-seccomp"), 0);
        if (fd < 0) {
            throw new IllegalStateException("memfd_create failed");
        }
        try {
            check("seccomp_export_bpf", (int) exportBpf.invokeExact(ctx, fd));
            // re-opening the memfd through /proc starts at offset 0
            return Files.readAllBytes(Path.of("/proc/self/fd/" + fd));
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the exported seccomp program", e);
        } finally {
            int ignored = (int) close.invokeExact(fd);
        }
    }

    /** Where libseccomp is, or the bare soname for the dynamic loader to find. */
    static String path() {
        for (String dir : List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib")) {
            Path p = Path.of(dir, "libseccomp.so.2");
            if (Files.exists(p)) {
                return p.toString();
            }
        }
        return "libseccomp.so.2";
    }

    static void check(String what, int rc) {
        if (rc < 0) {
            throw new IllegalStateException(what + " failed: " + rc);
        }
    }
}
