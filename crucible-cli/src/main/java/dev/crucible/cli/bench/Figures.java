package dev.crucible.cli.bench;

import java.util.Arrays;

/** The arithmetic the benches share: a median of their rounds, and milliseconds since a {@code System.nanoTime()}. */
final class Figures {
    private Figures() {}

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static double msSince(long start) {
        return (System.nanoTime() - start) / 1e6;
    }
}
