package dev.crucible.sandbox.cgroup;

import java.util.function.IntSupplier;

/**
 * The CPU weight a run's sandbox gets, in percent of a normal run's: what a scheduler of turns (the server's admission)
 * decides for the runs it lets through, and what a sandbox launched on the same thread writes into its cgroup ({@code
 * cpu.weight} on v2, {@code cpu.shares} on v1). A token that holds three turns while another token runs gets 33 for each,
 * so that the kernel splits the cores between tokens, not between sandboxes; a quiet token's single run is then not
 * slowed by another's burst beyond its fair share of the CPU.
 *
 * <p>The share is the calling thread's, set for the span of a turn ({@link #set}); a run launched elsewhere gets
 * {@link #NORMAL}. Thread-safe (each thread its own).
 */
public final class CpuShare {
    /** A run's weight when nothing says otherwise. */
    public static final int NORMAL = 100;

    /** A warm-pool sandbox waiting for a request: it yields the CPU to everything else. */
    public static final int BACKGROUND = 1;

    private static final ThreadLocal<IntSupplier> CURRENT = new ThreadLocal<>();

    private CpuShare() {
    }

    /**
     * The share set on this thread as it goes ({@link #NORMAL} when none is): a run asks it again while it runs, so
     * that its weight follows its token's turns (another token's run starting or ending).
     */
    public static IntSupplier current() {
        IntSupplier share = CURRENT.get();
        return share == null ? () -> NORMAL : () -> Math.clamp(share.getAsInt(), BACKGROUND, NORMAL);
    }

    /** As {@link #set(IntSupplier)}, a fixed share. */
    public static Scope set(int percent) {
        return set(() -> percent);
    }

    /**
     * Sets this thread's share to what {@code percent} says now and later (clamped to 1..{@link #NORMAL}) until the
     * returned scope is closed, which restores the one before. Close it on this thread.
     */
    public static Scope set(IntSupplier percent) {
        IntSupplier before = CURRENT.get();
        CURRENT.set(percent);
        return () -> {
            if (before == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(before);
            }
        };
    }

    /** A share set for a span; closing restores the one before. */
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
