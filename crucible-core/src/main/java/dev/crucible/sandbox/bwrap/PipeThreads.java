package dev.crucible.sandbox.bwrap;

import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The reusable platform threads of one launcher for blocking I/O: a run's output readers, large stdin writes, its
 * supervision and the cgroup files of its teardown. Pipe reads and writes block in native code, which pins a virtual
 * thread's carrier; enough waiting sandboxes (a warm pool) would pin every carrier and stall the server.
 */
final class PipeThreads {
    private PipeThreads() {}

    /**
     * A cached pool of daemon platform threads named {@code crucible-pipe}, owned by one launcher, which shuts it
     * down on close. Work handed to it after that (the teardown of a run that outlived the close) still runs, on a
     * fresh platform thread of its own, so a slot or a cgroup is never left behind for want of a thread.
     */
    static ExecutorService create() {
        ThreadFactory threads = r -> {
            Thread t = new Thread(r, "crucible-pipe");
            t.setDaemon(true);
            return t;
        };
        return new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60L, TimeUnit.SECONDS, new SynchronousQueue<>(), threads,
                (task, pool) -> threads.newThread(task).start());
    }

    /** Writes a small input (it fits the pipe's buffer) now, on the caller's thread, and closes the pipe. */
    static Future<?> feedNow(OutputStream stdin, byte[] input) {
        feed(stdin, input);
        return CompletableFuture.completedFuture(null);
    }

    /** Writes the program's input and closes its stdin; what it does not read is dropped. */
    static void feed(OutputStream stdin, byte[] input) {
        try (stdin) {
            stdin.write(input);
        } catch (IOException e) {
            // the program exited or closed its stdin; what it did not read is dropped
        }
    }

    /** Waits for a pipe task; true when it finished in time. */
    static boolean await(Future<?> task, long millis) throws InterruptedException {
        try {
            task.get(Math.max(1, millis), TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            return true; // the task ended (it catches its own I/O errors)
        } catch (TimeoutException e) {
            return false;
        }
    }

    /** Closes {@code resource} (a null one is skipped); a failure is logged, never thrown. */
    static void closeQuietly(AutoCloseable resource) {
        try (resource) {
        } catch (Exception e) {
            System.getLogger("crucible.sandbox").log(System.Logger.Level.DEBUG, "cannot close " + resource, e);
        }
    }
}
