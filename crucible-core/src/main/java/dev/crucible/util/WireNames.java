package dev.crucible.util;

import java.util.Locale;
import java.util.function.Function;

/** Enumerated wire values read leniently in their spelling only: any case, surrounding blanks dropped. */
public final class WireNames {
    private WireNames() {}

    /** The one of {@code values} whose wire name ({@code wire}) is {@code name} in any case; null for none. */
    public static <E> E find(E[] values, Function<E, String> wire, String name) {
        String n = name == null ? "" : name.strip().toLowerCase(Locale.ROOT);
        for (E value : values) {
            if (wire.apply(value).equals(n)) {
                return value;
            }
        }
        return null;
    }
}
