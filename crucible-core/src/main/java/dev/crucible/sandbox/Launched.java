package dev.crucible.sandbox;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One started sandbox: its process, its cgroups and its two output readers. {@link #complete} feeds stdin and
 * supervises it to the end under the given limits, measured from that call (so a pooled sandbox is timed from the
 * moment it is claimed, not from its start). Used once; then {@code onDone} releases the slot in the background.
 */
final class Launched implements Sandbox.Launch {
    private static final long POLL_MS = 10;
    private static final long TEARDOWN_MS = 3_000;

    private final Process process;
    private final Cgroups.RunGroup group;
    private final Runnable onDone;
    private final Output stdout;
    private final Output stderr;
    private final java.util.concurrent.Future<?> out;
    private final java.util.concurrent.Future<?> err;
    private final AtomicBoolean used = new AtomicBoolean();
    /** The launcher's platform threads: pipes and cgroup files block in native code (see {@link PipeThreads}). */
    private final ExecutorService pipes;
    private final boolean background;

    Launched(Process process, Cgroups.RunGroup group, boolean background, int outputCap, ExecutorService pipes,
            Runnable onDone) {
        this.process = process;
        this.pipes = pipes;
        this.group = group;
        this.background = background;
        this.onDone = onDone;
        Runnable kill = process::destroyForcibly;
        this.stdout = new Output(outputCap, false, kill);
        this.stderr = new Output(outputCap, true, kill);
        this.out = pipes.submit(() -> stdout.drain(process.getInputStream()));
        this.err = pipes.submit(() -> stderr.drain(process.getErrorStream()));
    }

    @Override
    public boolean alive() {
        return process.isAlive() && !used.get();
    }

    @Override
    public void abandon() {
        if (used.compareAndSet(false, true)) {
            process.destroyForcibly();
            try {
                process.waitFor(TEARDOWN_MS, TimeUnit.MILLISECONDS);
                joinOrClose();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                onDone.run();
            }
        }
    }

    @Override
    public SandboxResult complete(byte[] stdin, Limits limits, OutputListener listener) throws InterruptedException {
        if (!used.compareAndSet(false, true)) {
            throw new IllegalStateException("a sandbox serves exactly one run");
        }
        // on a platform thread: the cgroup files and pipes are blocking I/O, which on a virtual thread costs a
        // compensating carrier per call
        var task = pipes.submit(() -> supervise(stdin, limits, listener));
        try {
            return task.get();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            task.cancel(true);
            if (group != null) {
                group.forgo(); // the cancelled supervision may still write its limits: no later run gets these groups
            }
            throw e;
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof InterruptedException ie) {
                throw ie;
            }
            throw new IllegalStateException("supervising a sandbox failed", e.getCause());
        } finally {
            onDone.run();
        }
    }

    private SandboxResult supervise(byte[] stdin, Limits limits, OutputListener listener) throws InterruptedException {
        if (group != null) {
            try {
                group.limit(limits);
                if (background) {
                    group.background(false);
                }
            } catch (IOException e) {
                process.destroyForcibly();
                return FailedLaunch.result("cannot set the run's limits: " + e.getMessage());
            }
        }
        stdout.configure(limits.outputBytes(), listener);
        stderr.configure(limits.outputBytes(), listener);
        long start = System.nanoTime();
        long cpuStart = group == null ? 0 : Math.max(0, group.cpuNanos());
        // a small input fits the pipe's buffer: written here, with no hand-off; a large one gets its own thread
        var in = stdin.length <= 16 * 1024 ? feedNow(process.getOutputStream(), stdin)
                : pipes.submit(() -> feed(process.getOutputStream(), stdin));
        boolean timedOut = false;
        boolean cpuExceeded = false;
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(limits.timeoutMs());
        long cpuBudget = TimeUnit.MILLISECONDS.toNanos(limits.cpuMs());
        try {
            while (!process.waitFor(Math.min(POLL_MS, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)),
                    TimeUnit.MILLISECONDS)) {
                if (System.nanoTime() >= deadline) {
                    timedOut = true;
                    process.destroyForcibly();
                } else if (group != null && group.cpuNanos() - cpuStart > cpuBudget) {
                    cpuExceeded = true;
                    process.destroyForcibly();
                }
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            throw e;
        }
        long wallMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        await(in, TEARDOWN_MS);
        joinOrClose();
        int exit = process.exitValue();
        long cpuNanos = group == null ? -1 : Math.max(0, group.cpuNanos() - cpuStart);
        if (!cpuExceeded && group != null && cpuNanos > cpuBudget && exit != 0) {
            cpuExceeded = true; // killed by RLIMIT_CPU, or ran past the budget between two polls
        }
        Integer signal = exit > 128 && exit < 128 + 65 ? exit - 128 : null;
        return new SandboxResult(exit, signal, stdout.bytes(), stderr.bytes(), stdout.truncated(), stderr.truncated(),
                wallMs, cpuNanos < 0 ? -1 : cpuNanos / 1_000_000, group == null ? -1 : group.memoryPeakBytes(),
                timedOut, cpuExceeded && !timedOut, group != null && group.oomKills() > 0, setupError(exit, stderr));
    }

    /**
     * crucible-launch (exit 125), bwrap and setpriv (exit 1) say what went wrong on stderr before the program starts.
     * A program could print the same words; it then only misleads itself.
     */
    private static String setupError(int exit, Output stderr) {
        if (exit != 1 && exit != 127 && exit != LaunchCommand.JOIN_FAILED) {
            return null;
        }
        String text = new String(stderr.bytes(), StandardCharsets.UTF_8);
        for (String tool : List.of("bwrap: ", "setpriv: ", "crucible-launch: ")) {
            if (text.startsWith(tool)) {
                return text.lines().findFirst().orElse(text).strip();
            }
        }
        return null;
    }

    private static java.util.concurrent.Future<?> feedNow(OutputStream stdin, byte[] input) {
        feed(stdin, input);
        return java.util.concurrent.CompletableFuture.completedFuture(null);
    }

    private static void feed(OutputStream stdin, byte[] input) {
        try (stdin) {
            stdin.write(input);
        } catch (IOException e) {
            // the program exited or closed its stdin; what it did not read is dropped
        }
    }

    /**
     * Waits for the readers. The pid namespace dies with the outer bwrap, which closes every pipe; if something
     * still holds one past the deadline, our ends are closed.
     */
    private void joinOrClose() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
        for (var reader : List.of(out, err)) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0 || !await(reader, left)) {
                closeQuietly(process.getInputStream());
                closeQuietly(process.getErrorStream());
                await(reader, TEARDOWN_MS);
            }
        }
    }

    /** Waits for a pipe task; true when it finished in time. */
    private static boolean await(java.util.concurrent.Future<?> task, long millis) throws InterruptedException {
        try {
            task.get(Math.max(1, millis), TimeUnit.MILLISECONDS);
            return true;
        } catch (java.util.concurrent.ExecutionException e) {
            return true; // the task ended (it catches its own I/O errors)
        } catch (java.util.concurrent.TimeoutException e) {
            return false;
        }
    }

    static void closeQuietly(java.io.Closeable in) {
        try {
            in.close();
        } catch (IOException e) {
            // nothing to do
        }
    }
}
