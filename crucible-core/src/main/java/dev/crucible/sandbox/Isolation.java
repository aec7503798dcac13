package dev.crucible.sandbox;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import dev.crucible.util.WireNames;

/**
 * The wall a program runs behind. Ordered weakest first: a request may ask for a stronger tier than its runtime's,
 * never a weaker one ({@link #atLeast}).
 */
public enum Isolation {
    /**
     * The host kernel's own walls: bubblewrap's namespaces, a seccomp filter, cgroups and rlimits, an unprivileged uid
     * (docs/sandbox-recipe.md). Fast; a kernel bug reachable through an allowed system call is an escape.
     */
    NAMESPACES("namespaces"),
    /**
     * gVisor: the program's system calls reach runsc's Sentry, a kernel in user space that itself runs under a seccomp
     * filter, inside the same cgroups and uid as {@link #NAMESPACES}. A second wall, at a start-up and syscall cost.
     */
    GVISOR("gvisor");

    private final String wire;

    Isolation(String wire) {
        this.wire = wire;
    }

    /** The name in the API, the TOML and the CLI: {@code namespaces}, {@code gvisor}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The stronger of this and {@code other}. */
    public Isolation atLeast(Isolation other) {
        return other == null || other.ordinal() <= ordinal() ? this : other;
    }

    /**
     * The tier named {@code name} ({@code "namespaces"}, {@code "gvisor"}; any case).
     *
     * @throws IllegalArgumentException naming the tiers there are
     */
    @JsonCreator
    public static Isolation parse(String name) {
        Isolation found = WireNames.find(values(), Isolation::wire, name);
        if (found != null) {
            return found;
        }
        throw new IllegalArgumentException("isolation is \"namespaces\" or \"gvisor\", not \""
                + String.valueOf(name).replaceAll("\\p{Cntrl}", "?") + "\"");
    }
}
