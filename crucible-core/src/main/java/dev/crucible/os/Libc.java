package dev.crucible.os;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The C library as {@link Linux} and {@link Processes} call it through the FFM API: a downcall handle by symbol name,
 * with {@code errno} captured where the call reports failure through it, and the check that turns a negative return
 * into an {@link Linux.ErrnoException}.
 */
final class Libc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    /** The state a call with {@code errno} captured writes; allocate one per call ({@link #errnoIn} reads it). */
    static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(
            MemoryLayout.PathElement.groupElement("errno"));

    private Libc() {}

    /** {@code name}, whose first argument is then the call state that receives {@code errno}. */
    static MethodHandle errno(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor, Linker.Option.captureCallState("errno"));
    }

    /** As {@link #errno}, for a variadic {@code name} whose arguments from {@code first} on are the variadic ones. */
    static MethodHandle variadic(String name, FunctionDescriptor descriptor, int first) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor, Linker.Option.captureCallState("errno"),
                Linker.Option.firstVariadicArg(first));
    }

    /** {@code name}, for a call that cannot fail or reports nothing through {@code errno}. */
    static MethodHandle plain(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor);
    }

    /**
     * {@code long syscall(long number, ...)} with {@code errno} captured, for the calls libc has no wrapper for on every
     * distribution: variadic, so every argument after the number is passed as a long (or an address).
     */
    static MethodHandle syscall(FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.find("syscall").orElseThrow(), descriptor,
                Linker.Option.captureCallState("errno"), Linker.Option.firstVariadicArg(1));
    }

    /** The {@code errno} a call left in {@code state}. */
    static int errnoIn(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** One downcall with its call state and an arena for its arguments. */
    @FunctionalInterface
    interface Call {
        int invoke(MemorySegment state, Arena arena) throws Throwable;
    }

    /** Runs {@code body}; a negative return throws {@code call} with the errno it left, about {@code path} if not null. */
    static void check(String call, String path, Call body) throws Linux.ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            if (body.invoke(state, arena) < 0) {
                throw new Linux.ErrnoException(call, path, errnoIn(state));
            }
        } catch (Linux.ErrnoException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(call, t);
        }
    }
}
