package dev.crucible.util;

import dev.crucible.os.Processes;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A value computed at most once: on a daemon thread started ahead of need ({@link #startInBackground}), or else on
 * the first caller's thread. Every caller gets the same value, or the same failure rethrown as it was thrown, so an
 * error found ahead of time reaches the caller that needs the value with its own words. Thread-safe.
 *
 * <pre>{@code
 * static final Once<byte[]> PROGRAM = new Once<>(SeccompProgram::build);
 * PROGRAM.startInBackground("crucible-seccomp"); // while the command line is parsed
 * byte[] program = PROGRAM.get();                 // waits for the build, or runs it here
 * }</pre>
 */
public final class Once<T> {
    private final FutureTask<T> task;
    private final AtomicBoolean started = new AtomicBoolean();

    public Once(Callable<T> compute) {
        this.task = new FutureTask<>(compute);
    }

    /** Starts the computation on a daemon thread named {@code name}, unless it has started already. */
    public void startInBackground(String name) {
        start(name, task);
    }

    /**
     * As {@link #startInBackground}, the thread at a lower priority (nice 10): for what is not on the way to an answer,
     * so that on a busy host (a server starting on two cores) it takes the cores only when nothing else needs them.
     */
    public void startWhenIdle(String name) {
        start(name, () -> {
            Processes.lowerThisThreadsPriority(MadeAhead.BACKGROUND_NICE);
            task.run();
        });
    }

    private void start(String name, Runnable body) {
        if (started.compareAndSet(false, true)) {
            Thread.ofPlatform().name(name).daemon().start(body);
        }
    }

    /**
     * The value, computing it here when no one has started it. Waits through interrupts (the computation is short
     * and bounded by its own timeouts) and keeps the interrupt for the caller.
     *
     * @throws RuntimeException or {@link Error} exactly as the computation threw it; a checked exception wrapped
     *     in an {@link IllegalStateException}
     */
    public T get() {
        if (started.compareAndSet(false, true)) {
            task.run();
        }
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return task.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof RuntimeException r) {
                        throw r;
                    }
                    if (cause instanceof Error error) {
                        throw error;
                    }
                    throw new IllegalStateException(cause.getMessage(), cause);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
