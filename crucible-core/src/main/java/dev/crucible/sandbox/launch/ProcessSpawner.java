package dev.crucible.sandbox.launch;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Starts every sandbox from one long-lived platform thread. bubblewrap's {@code --die-with-parent} is
 * PR_SET_PDEATHSIG, which fires when the spawning <em>thread</em> exits: a sandbox started from a short-lived or
 * virtual carrier thread could be killed mid-run. The child gets an empty environment (bwrap's own environment is
 * readable inside as /proc/1/environ), and the JDK closes every descriptor but 0, 1 and 2 in it (an inherited
 * descriptor would be a way out of the sandbox's view). See docs/sandbox-recipe.md, One launcher thread, Descriptors
 * and Environment emptied. Public: the launcher and the zygotes share one.
 */
public final class ProcessSpawner implements AutoCloseable {
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "crucible-launcher");
        t.setDaemon(true);
        return t;
    });

    Process start(List<String> argv) throws IOException, InterruptedException {
        return start(argv, null);
    }

    /** As {@link #start(List)}, with stderr appended to {@code errorLog} when it is not null. */
    public Process start(List<String> argv, Path errorLog) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(argv);
        if (errorLog != null) {
            builder.redirectError(ProcessBuilder.Redirect.appendTo(errorLog.toFile()));
        }
        builder.environment().clear();
        builder.directory(new File("/"));
        try {
            return onLauncherThread(builder::start);
        } catch (RuntimeException e) {
            throw new IOException("cannot start the sandbox: " + e, e);
        }
    }

    /**
     * Runs {@code task} on the launcher thread (a platform thread that lives as long as the sandboxes it started): for
     * per-thread kernel state such as a network namespace made just before a launch.
     */
    public <T> T onLauncherThread(Callable<T> task) throws IOException, InterruptedException {
        try {
            return thread.submit(task).get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IOException("on the launcher thread: " + e.getCause(), e.getCause());
        }
    }

    /**
     * Whether the launcher thread runs a no-op within {@code bound}: every spawn goes through it, so a launcher thread
     * that does not is a process that cannot recover by itself.
     */
    public boolean answers(Duration bound) throws InterruptedException {
        try {
            thread.submit(() -> { }).get(bound.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException | ExecutionException
                | RejectedExecutionException e) {
            return false;
        }
    }

    /** Stops accepting launches. Sandboxes already running keep their parent thread until the JVM exits. */
    @Override
    public void close() {
        // the thread must outlive every sandbox it started, so it is never interrupted; being a daemon it ends
        // with the JVM, and bwrap's --die-with-parent then takes every sandbox down with it
        thread.shutdown();
    }
}
