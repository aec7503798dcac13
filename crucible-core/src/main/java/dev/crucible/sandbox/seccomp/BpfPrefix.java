package dev.crucible.sandbox.seccomp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The instructions put in front of libseccomp's program (see {@link #prefix}): a bound on the system call numbers, so
 * that a call newer than libseccomp's table is refused as unknown, and the one argument check libseccomp cannot
 * express; and the shape a program must have to be trusted from the cache ({@link #wellFormed}).
 */
final class BpfPrefix {
    /** AUDIT_ARCH_X86_64 and AUDIT_ARCH_AARCH64: where the raw-number rule applies (the native ABI). */
    private static final int AUDIT_ARCH_X86_64 = 0xC000003E;
    private static final int AUDIT_ARCH_AARCH64 = 0xC00000B7;
    private static final int X32_SYSCALL_BIT = 0x40000000;

    /** How many instructions {@link #prefix} puts before libseccomp's program. */
    private static final int PREFIX_INSTRUCTIONS = 11;

    /** BPF_MAXINSNS: the kernel loads no longer program. */
    static final int MAX_INSTRUCTIONS = 4096;

    private BpfPrefix() {}

    /**
     * Puts two rules in front of libseccomp's program, on the native ABI: a system call numbered above the highest one
     * libseccomp knows — one newer than its table, which its allow-by-default program would let through — gets
     * ENOSYS, as a kernel without it would answer (programs fall back); and {@code personality} with anything but
     * PER_LINUX (0) or the query (0xffffffff) gets EPERM (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE…: libseccomp cannot
     * compare one argument twice). x32 numbers (bit 30) and other architectures go on to libseccomp's program, which
     * kills them. Jumps in BPF are relative, so libseccomp's program after the prefix is unchanged.
     */
    static byte[] prefix(int highest, int personality, byte[] program) {
        int arch = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> AUDIT_ARCH_X86_64;
            case "aarch64", "arm64" -> AUDIT_ARCH_AARCH64;
            default -> 0;
        };
        if (arch == 0 || highest <= 0 || personality < 0) {
            throw new IllegalStateException("cannot bound system call numbers on " + System.getProperty("os.arch"));
        }
        int start = PREFIX_INSTRUCTIONS; // libseccomp's first instruction
        ByteBuffer b = ByteBuffer.allocate(start * 8).order(ByteOrder.nativeOrder());
        instruction(b, 0x20, 0, 0, 4);                             // 0: A = seccomp_data.arch
        instruction(b, 0x15, 0, start - 2, arch);                  // 1: native ? 2 : libseccomp's
        instruction(b, 0x20, 0, 0, 0);                             // 2: A = seccomp_data.nr
        instruction(b, 0x35, start - 4, 0, X32_SYSCALL_BIT);       // 3: x32 ? libseccomp's (kills) : 4
        instruction(b, 0x25, 5, 0, highest);                       // 4: above the table ? 10 : 5
        instruction(b, 0x15, 0, start - 6, personality);           // 5: personality ? 6 : libseccomp's
        instruction(b, 0x20, 0, 0, 16);                            // 6: A = low half of args[0] (little-endian)
        instruction(b, 0x15, start - 8, 0, 0);                     // 7: PER_LINUX ? libseccomp's : 8
        instruction(b, 0x15, start - 9, 0, 0xFFFFFFFF);            // 8: the query ? libseccomp's : 9
        instruction(b, 0x06, 0, 0, SeccompProgram.errno(SeccompProgram.EPERM));                  // 9: EPERM
        instruction(b, 0x06, 0, 0, SeccompProgram.errno(SeccompProgram.ENOSYS));                 // 10: ENOSYS
        byte[] out = new byte[b.capacity() + program.length];
        System.arraycopy(b.array(), 0, out, 0, b.capacity());
        System.arraycopy(program, 0, out, b.capacity(), program.length);
        return out;
    }

    /** One {@code struct sock_filter {u16 code; u8 jt; u8 jf; u32 k;}}. */
    private static void instruction(ByteBuffer b, int code, int jt, int jf, int k) {
        b.putShort((short) code).put((byte) jt).put((byte) jf).putInt(k);
    }

    /**
     * Whole instructions, within the kernel's limit, that start with {@link #prefix}'s shape: load the architecture,
     * the bound on the number, and its two answers (EPERM, ENOSYS). A cut or foreign file is built again.
     */
    static boolean wellFormed(byte[] program) {
        if (program.length % 8 != 0 || program.length <= PREFIX_INSTRUCTIONS * 8
                || program.length > MAX_INSTRUCTIONS * 8) {
            return false;
        }
        ByteBuffer b = ByteBuffer.wrap(program).order(ByteOrder.nativeOrder());
        return b.getShort(0) == 0x20 && b.getInt(4) == 4
                && b.getShort(4 * 8) == 0x25
                && b.getShort(9 * 8) == 0x06 && b.getInt(9 * 8 + 4) == SeccompProgram.errno(SeccompProgram.EPERM)
                && b.getShort(10 * 8) == 0x06 && b.getInt(10 * 8 + 4) == SeccompProgram.errno(SeccompProgram.ENOSYS);
    }
}
