package dev.crucible.session.process;

import java.util.Locale;
import java.util.Map;

/** Signal names as users write them ({@code "TERM"}, {@code "SIGTERM"}, {@code 15}) and their Linux numbers. */
public final class Signals {
    private static final Map<String, Integer> NUMBERS = Map.ofEntries(Map.entry("HUP", 1), Map.entry("INT", 2),
            Map.entry("QUIT", 3), Map.entry("KILL", 9), Map.entry("USR1", 10), Map.entry("USR2", 12),
            Map.entry("PIPE", 13), Map.entry("ALRM", 14), Map.entry("TERM", 15), Map.entry("CONT", 18),
            Map.entry("STOP", 19), Map.entry("TSTP", 20), Map.entry("WINCH", 28));

    private Signals() {}

    /**
     * The number of a signal given as a name (with or without {@code SIG}, any case) or a number from 1 to 64.
     *
     * @throws IllegalArgumentException for anything else, with the names that are taken
     */
    public static int number(Object signal) {
        if (signal instanceof Number n && n.doubleValue() == n.intValue() && n.intValue() >= 1 && n.intValue() <= 64) {
            return n.intValue();
        }
        if (signal instanceof String s) {
            String name = s.strip().toUpperCase(Locale.ROOT);
            Integer number = NUMBERS.get(name.startsWith("SIG") ? name.substring(3) : name);
            if (number != null) {
                return number;
            }
        }
        throw new IllegalArgumentException("signal must be a number from 1 to 64 or one of "
                + NUMBERS.keySet().stream().sorted().toList() + " (with or without SIG), not " + signal);
    }
}
