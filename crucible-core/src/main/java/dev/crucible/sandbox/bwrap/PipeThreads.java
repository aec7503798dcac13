package dev.crucible.sandbox.bwrap;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

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
}
