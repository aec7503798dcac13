package dev.crucible.sandbox;

/**
 * Receives a run's output as it is produced (streaming). Called from the run's reader threads, one per stream,
 * so calls for stdout and stderr may overlap; only bytes within the cap are passed on.
 */
@FunctionalInterface
public interface OutputListener {
    /** Ignores everything. */
    OutputListener NONE = (stderr, bytes, length) -> { };

    /**
     * @param stderr true for standard error, false for standard output
     * @param bytes the chunk; valid only during the call
     * @param length how many bytes of {@code bytes} are the chunk
     */
    void chunk(boolean stderr, byte[] bytes, int length);
}
