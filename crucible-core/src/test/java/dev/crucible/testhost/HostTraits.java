package dev.crucible.testhost;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What this host's kernel does on its own, outside any sandbox, probed once per JVM: the facts an expectation of the
 * hostile catalogue may depend on (its {@code on_host} entries), so that a test states a property ("no 32-bit system
 * call ever runs") instead of one kernel's way of refusing.
 *
 * <p>Thread-safe; the probe runs on first use.
 */
public final class HostTraits {
    /** A trait a host may have; its wire name is the key of an expectation's {@code on_host} object. */
    public enum Trait {
        /**
         * The kernel itself refuses the 32-bit system call ABI to a 64-bit process: {@code int $0x80} is killed with
         * SIGSEGV before any filter sees it (a paravirtualised guest without IA-32 emulation does this).
         */
        IA32_REFUSED("ia32-refused");

        private final String wireName;

        Trait(String wireName) {
            this.wireName = wireName;
        }

        public String wireName() {
            return wireName;
        }

        /** The trait named {@code name}, or an error naming the known ones (a typo in a file must not pass quietly). */
        public static Trait of(String name) {
            for (Trait t : values()) {
                if (t.wireName.equals(name)) {
                    return t;
                }
            }
            throw new IllegalArgumentException("unknown host trait " + name + "; known: "
                    + Stream.of(values()).map(Trait::wireName).toList());
        }
    }

    /** i386 getpid (20) through {@code int $0x80}: harmless where it runs, SIGSEGV where the kernel refuses it. */
    static final String IA32_PROBE = """
            #include <stdio.h>
            int main(void) {
              long ret;
              __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
              printf("ia32 getpid -> %ld\\n", ret);
              return 0;
            }
            """;

    private static Set<Trait> traits;

    private HostTraits() {}

    /** The traits this host has (probed on first call). */
    public static synchronized Set<Trait> present() {
        if (traits == null) {
            Set<Trait> found = EnumSet.noneOf(Trait.class);
            if (ia32Refused()) {
                found.add(Trait.IA32_REFUSED);
            }
            traits = found;
            System.out.println("[HostTraits] this host: " + (found.isEmpty() ? "none of " + EnumSet.allOf(Trait.class)
                    : found).toString().toLowerCase(Locale.ROOT));
        }
        return traits;
    }

    public static boolean has(Trait trait) {
        return present().contains(trait);
    }

    /**
     * Compiles and runs {@link #IA32_PROBE} as this JVM's user: true when it dies of SIGSEGV, false when the call
     * returned. Anything else (no compiler, another signal) is an error: the expectations cannot be chosen blind.
     */
    static boolean ia32Refused() {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("crucible-ia32-probe");
            Path source = Files.writeString(dir.resolve("probe.c"), IA32_PROBE);
            Path binary = dir.resolve("probe");
            int compiled = run(dir, "gcc", "-O0", "-o", binary.toString(), source.toString());
            if (compiled != 0) {
                throw new IllegalStateException("the host probe for the IA-32 ABI did not compile (gcc exit "
                        + compiled + "); install gcc (the c runtime needs it too)");
            }
            int exit = run(dir, binary.toString());
            return switch (exit) {
                case 0 -> false;
                case 128 + 11 -> true; // the JDK reports a process killed by signal N as 128 + N
                default -> throw new IllegalStateException("the host probe for the IA-32 ABI ended with " + exit
                        + ", neither a return nor SIGSEGV; the hostile expectations do not know this host");
            };
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } finally {
            delete(dir);
        }
    }

    private static int run(Path dir, String... argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", argv) + " did not end");
        }
        if (p.exitValue() != 0 && p.exitValue() != 139) {
            System.out.println("[HostTraits] " + String.join(" ", argv) + ": " + new String(out, StandardCharsets.UTF_8));
        }
        return p.exitValue();
    }

    private static void delete(Path dir) {
        if (dir == null) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }
}
