package dev.crucible.eval.dataset;

/**
 * One part of a dataset run split N ways ({@code --shard I/N}): the samples whose position in the dataset — the order
 * of the samples file, or of the problems for reference solutions, counted from 0 over the usable lines — is {@code I}
 * modulo {@code N}. {@code I} counts from 0, as a Kubernetes Indexed Job's {@code JOB_COMPLETION_INDEX} does. Every
 * sample belongs to exactly one shard of N, and which one does not depend on what ran before.
 */
public record Shard(int index, int count) {
    public Shard {
        if (count < 1 || index < 0 || index >= count) {
            throw new IllegalArgumentException("--shard is I/N with 0 <= I < N (I counts from 0), not " + index + "/" + count);
        }
    }

    /**
     * Reads {@code I/N}.
     *
     * @throws IllegalArgumentException saying what a shard looks like
     */
    public static Shard parse(String text) {
        String[] parts = text.strip().split("/", -1);
        try {
            if (parts.length == 2) {
                return new Shard(Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip()));
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException("--shard is I/N with 0 <= I < N (I counts from 0), e.g. 0/4; not '" + text + "'");
    }

    /** Whether the sample at {@code position} (from 0) is this shard's. */
    public boolean includes(int position) {
        return position % count == index;
    }

    @Override
    public String toString() {
        return index + "/" + count;
    }
}
