package dev.crucible.sandbox.bwrap;

import dev.crucible.os.ProcStatus;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.cgroup.CpuShare;
import dev.crucible.sandbox.launch.Gvisor;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.zygote.ZygoteChild;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;
import java.util.function.UnaryOperator;

/**
 * One started sandbox: its process, its cgroups and its two output readers. {@link #complete} feeds stdin and
 * supervises it to the end under the given limits, measured from that call (so a pooled sandbox is timed from the
 * moment it is claimed, not from its start). Used once; then {@code onDone} releases the slot in the background.
 */
@SuppressWarnings("checkstyle:JavaNCSS") // one run's supervision: its hand-over, watch and verdict share one process
final class Launched implements Sandbox.Launch {
    private static final long POLL_MS = 10;
    private static final long TEARDOWN_MS = 3_000;

    private final Process process;
    private final Cgroups.RunGroup group;
    private final Runnable onDone;
    private final Output stdout;
    private final Output stderr;
    private final Future<?> out;
    private final Future<?> err;
    private final AtomicBoolean used = new AtomicBoolean();
    /** The agent's pid once it was seen in its cgroup (0 before): the hand-over then reads one file, not the group. */
    private volatile long agentPid;
    private final ExecutorService pipes; // platform threads: pipes and cgroup files block in native code (PipeThreads)
    private final boolean background;
    /** The group's limits for a run's (gVisor's kernel takes its share); behind gVisor the agent is the Sentry. */
    private final UnaryOperator<Limits> onHost;
    private final boolean gvisor;

    Launched(Process process, Cgroups.RunGroup group, boolean background, int outputCap, ExecutorService pipes,
            UnaryOperator<Limits> onHost, boolean gvisor, Runnable onDone) {
        this.onHost = onHost;
        this.gvisor = gvisor;
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

    /**
     * {@inheritDoc} A launch started ahead asks its cgroup for its agent (a member inside the sandbox's pid namespace,
     * not bubblewrap's monitor or init) and {@code /proc} for its standing: once seen, a group without it means it
     * ended; a SIGKILL or SIGSTOP sent to it counts at once, though a starved agent acts on it only later.
     */
    @Override
    public Readiness readiness() {
        if (used.get()) {
            return Readiness.USED;
        }
        if (!process.isAlive()) {
            return Readiness.ENDED;
        }
        if (!background || group == null) {
            return Readiness.READY;
        }
        long pid = agentPid;
        ProcStatus.Standing agent = pid != 0 ? standingOf(pid) : agentStanding();
        if (agent == null) {
            return pid != 0 ? Readiness.ENDED : Readiness.STARTING;
        }
        return switch (agent) {
            case RUNS -> Readiness.READY;
            case STOPPED -> Readiness.STOPPED;
            case ENDING -> Readiness.ENDED;
        };
    }

    /**
     * The standing of the run's agent: its cgroup's members inside the sandbox's pid namespace (not bubblewrap's
     * monitor or init, which follow the agent out), the worst of them; null when there is none (not yet started, or
     * gone).
     */
    private ProcStatus.Standing agentStanding() {
        ProcStatus.Standing worst = null;
        for (long pid : group.pids()) {
            var status = ProcStatus.of(pid);
            if (status.isEmpty() || !(gvisor ? Gvisor.isSentry(pid, process.pid()) : status.get().insideSandbox())) {
                continue;
            }
            ProcStatus.Standing standing = status.get().standing();
            if (standing == ProcStatus.Standing.ENDING) {
                return standing;
            }
            if (worst == null || standing == ProcStatus.Standing.STOPPED) {
                worst = standing;
            }
            agentPid = pid;
        }
        return worst;
    }

    /** The standing of the agent seen at {@code pid}; null once gone (a pid reused meanwhile: see complete()). */
    private ProcStatus.Standing standingOf(long pid) {
        var status = ProcStatus.of(pid);
        return status.isPresent() && (status.get().insideSandbox() || gvisor) ? status.get().standing() : null;
    }

    List<Long> members() { // tests: the processes in the run's cgroup now; empty without one
        return group == null ? List.of() : group.pids();
    }

    @Override
    public Readiness awaitReady(long millis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        long pause = 1;
        Readiness readiness;
        while ((readiness = readiness()) == Readiness.STARTING && System.nanoTime() < deadline) {
            Thread.sleep(pause);
            pause = Math.min(pause * 2, POLL_MS);
        }
        return readiness;
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
        IntSupplier share = CpuShare.current(); // the caller's turn's share, taken on its thread
        var task = pipes.submit(() -> supervise(stdin, limits, listener, share));
        try {
            return task.get();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            task.cancel(true);
            if (group != null) {
                group.forgo(); // the cancelled supervision may still write its limits: no later run gets these groups
            }
            throw e;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof InterruptedException ie) {
                throw ie;
            }
            throw new IllegalStateException("supervising a sandbox failed", e.getCause());
        } finally {
            onDone.run();
        }
    }

    private SandboxResult supervise(byte[] stdin, Limits limits, OutputListener listener, IntSupplier share)
            throws InterruptedException {
        int weighed = CpuShare.NORMAL;
        if (group != null) {
            try {
                group.limit(onHost.apply(limits));
                weighed = share.getAsInt();
                if (background || weighed != CpuShare.NORMAL) {
                    group.weigh(weighed);
                }
            } catch (IOException e) {
                process.destroyForcibly();
                return FailedLaunch.result("cannot set the run's limits: " + e.getMessage());
            }
        }
        stdout.configure(limits.outputBytes(), listener);
        stderr.configure(limits.outputBytes(), listener);
        // a warm agent (launched ahead, or a zygote's child) that was waiting for its program when handed over
        boolean waitedForProgram = (background || process instanceof ZygoteChild) && process.isAlive();
        long start = System.nanoTime();
        long cpuStart = group == null ? -1 : group.cpuNanos();
        // a small input fits the pipe's buffer: written here, with no hand-off; a large one gets its own thread
        var in = stdin.length <= 16 * 1024 ? PipeThreads.feedNow(process.getOutputStream(), stdin)
                : pipes.submit(() -> PipeThreads.feed(process.getOutputStream(), stdin));
        Watch watch = new Watch(start, limits, cpuStart);
        try {
            while (!process.waitFor(watch.pollMs(System.nanoTime()), TimeUnit.MILLISECONDS)) {
                if (watch.step(System.nanoTime()) == Watch.Step.GIVE_UP) {
                    break;
                }
                weighed = reweigh(share, weighed);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            throw e;
        }
        long wallMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        PipeThreads.await(in, TEARDOWN_MS);
        joinOrClose();
        String lost = process instanceof ZygoteChild child ? child.lost() : null;
        if (watch.notTaken || (lost != null && !((ZygoteChild) process).wasForked())) {
            if (lost == null && process instanceof ZygoteChild child && !child.wasForked() && !child.zygoteStopped()) {
                return FailedLaunch.neverRan(SandboxResult.Untaken.BEHIND, "the zygote had not forked this run's"
                        + " sandbox within " + Math.min(TAKE_MS, limits.timeoutMs()) + " ms (behind on a busy host)",
                        wallMs);
            }
            return FailedLaunch.neverRan(SandboxResult.Untaken.STUCK, "the sandbox did not take its program within "
                    + Math.min(TAKE_MS, limits.timeoutMs()) + " ms (a stuck warm-pool agent or zygote; it was killed and"
                    + " is replaced)", wallMs);
        }
        long cpuSinceHandOver = group == null || watch.cpuStart < 0 ? -1 : group.cpuNanos() - watch.cpuStart;
        if (watch.timedOut && watch.behind && !watch.taken && watch.cpuAtTimeout == 0) {
            return FailedLaunch.result("the sandbox got no CPU within the run's " + limits.timeoutMs() + " ms time"
                    + " limit: the host is too busy; the program never ran", wallMs);
        }
        if (waitedForProgram && !watch.taken && !watch.notTaken && !watch.timedOut && !process.isAlive()
                && process.exitValue() > 128 && cpuSinceHandOver == 0 && stdout.totalBytes() == 0
                && stderr.totalBytes() == 0) {
            // it ended by a signal before its time to take the program had passed, having written nothing and used no
            // CPU since it was handed over: a warm agent killed from outside while it waited (and not yet reaped when
            // it was taken from the pool). Not a run that used any: a program killed by the shutdown's kill while it
            // slept used a little, and must get its own verdict (a threshold of 10 ms took it for a dead agent and
            // ran it again during the shutdown). An agent killed or stopped before the hand-over is never handed out
            // (readiness(): the signal counts once sent); this catches one killed in the moment between the two.
            return FailedLaunch.neverRan(SandboxResult.Untaken.DIED, "the warm sandbox ended before it took its program"
                    + " (exit " + process.exitValue() + ", " + cpuSinceHandOver / 1_000 + " µs of CPU since it was"
                    + " handed over)", wallMs);
        }
        if (process.isAlive()) {
            return FailedLaunch.result(watch.exitAsked && watch.killedAt < 0
                    ? "the program ended, but its zygote did not report how within " + KILL_MS + " ms of the run's"
                            + " time limit (a zygote that does not answer is replaced)"
                    : "the sandbox did not end within " + KILL_MS + " ms of being killed at "
                            + (watch.timedOut ? "its " + limits.timeoutMs() + " ms time limit" : "its limit")
                            + "; it is left to the teardown");
        }
        int exit = process.exitValue();
        long cpuNanos = group == null ? -1 : Math.max(0, group.cpuNanos() - Math.max(0, cpuStart));
        boolean cpuExceeded = watch.cpuExceeded;
        if (!cpuExceeded && group != null && cpuNanos > watch.cpuBudget && exit != 0) {
            cpuExceeded = true; // killed by RLIMIT_CPU, or ran past the budget between two polls
        }
        Integer signal = exit > 128 && exit < 128 + 65 ? exit - 128 : null;
        String error = lost != null ? "the zygote this run was forked from was replaced while it ran (" + lost
                + "); the run was killed" : setupError(exit, stderr);
        return new SandboxResult(exit, signal, stdout.bytes(), stderr.bytes(), stdout.truncated(), stderr.truncated(),
                wallMs, cpuNanos < 0 ? -1 : cpuNanos / 1_000_000, group == null ? -1 : group.memoryPeakBytes(),
                watch.timedOut, cpuExceeded && !watch.timedOut, group != null && group.oomKills() > 0, error);
    }

    /**
     * How long a sandbox may leave its program untaken, using no CPU since the program was handed over, before it is
     * looked at: one whose agent is stopped, gone or was never forked by its zygote is killed and its request runs
     * elsewhere; one whose agent is runnable or waiting in the kernel is behind on a busy host, not stuck, and is
     * looked at again (the run's deadline still holds). Any program that starts uses some CPU.
     */
    static final long TAKE_MS = 2_000;
    /** Runs with a shorter time limit are not judged untaken: a busy host may not schedule an agent that soon. */
    static final long TAKE_FLOOR_MS = 200;
    /** How long a sandbox that never took its program may take to end after its kill before the request moves on. */
    static final long NOT_TAKEN_KILL_MS = 500;
    /** How long a killed sandbox may take to end before its supervision gives up on it. */
    static final long KILL_MS = 3_000;

    /** Writes the run's CPU weight again when its share changed since {@code weighed}; the weight written now. */
    private int reweigh(IntSupplier share, int weighed) {
        int now = share.getAsInt();
        if (group == null || now == weighed) {
            return weighed;
        }
        try {
            group.weigh(now);
            return now;
        } catch (IOException e) {
            return weighed; // the group is going with the run: nothing to weigh
        }
    }

    /** One supervision's clock: the deadline, the CPU budget, whether the program was taken, the kill and its bound. */
    private final class Watch {
        enum Step { GO_ON, GIVE_UP }

        final long deadline;
        long takeBy;
        final long cpuBudget;
        final long cpuStart;
        boolean taken;
        boolean notTaken;
        /** Whether the agent was seen runnable but not yet given the CPU to take its program. */
        boolean behind;
        /** The CPU the run had used since the hand-over when its time ran out (its kill is charged after). */
        long cpuAtTimeout = -1;
        boolean timedOut;
        boolean cpuExceeded;
        boolean exitAsked;
        long killedAt = -1;
        long lastKill;

        Watch(long start, Limits limits, long cpuStart) {
            this.deadline = start + TimeUnit.MILLISECONDS.toNanos(limits.timeoutMs());
            this.takeBy = start + TimeUnit.MILLISECONDS.toNanos(Math.min(TAKE_MS, limits.timeoutMs()));
            this.cpuBudget = TimeUnit.MILLISECONDS.toNanos(limits.cpuMs());
            this.cpuStart = cpuStart;
            // without a cgroup's CPU count there is nothing to tell by; a run shorter than TAKE_FLOOR_MS just times out
            this.taken = group == null || cpuStart < 0 || limits.timeoutMs() < TAKE_FLOOR_MS;
        }

        long pollMs(long now) {
            long until = killedAt >= 0 ? killedAt + TimeUnit.MILLISECONDS.toNanos(KILL_MS) : taken ? deadline
                    : Math.min(deadline, takeBy);
            return Math.min(POLL_MS, Math.max(1, (until - now) / 1_000_000));
        }

        Step step(long now) {
            if (killedAt >= 0) {
                // a sandbox that never took its program is not waited for long: the request runs elsewhere, and the
                // slot's teardown sweeps what is left
                if (now - killedAt >= TimeUnit.MILLISECONDS.toNanos(notTaken ? NOT_TAKEN_KILL_MS : KILL_MS)) {
                    return Step.GIVE_UP;
                }
                if (process instanceof ZygoteChild child && out.isDone() && err.isDone() && group != null
                        && group.pids().isEmpty()) {
                    child.endedByOurKill(); // its status is the kill's, whenever a busy zygote gets to report it
                    return Step.GO_ON;
                }
                if (now - lastKill >= TimeUnit.MILLISECONDS.toNanos(500)) {
                    lastKill = now; // again: a zygote's child may have joined its cgroup after the first sweep
                    process.destroyForcibly();
                }
                return Step.GO_ON;
            }
            if (!taken && now >= takeBy) {
                if (group.cpuNanos() - cpuStart > 0) {
                    taken = true;
                } else if (agentStanding() == ProcStatus.Standing.RUNS) {
                    // runnable, or waiting in the kernel: behind on a busy host, not stuck; looked at again later,
                    // and the run's own deadline still holds
                    behind = true;
                    takeBy = now + TimeUnit.MILLISECONDS.toNanos(TAKE_MS);
                } else {
                    notTaken = true; // stopped, gone, or never started (a zygote that did not fork it)
                    kill(now);
                    return Step.GO_ON;
                }
            }
            if (exitAsked) { // the program is gone by our measure: only its status is awaited, from its zygote
                return now - deadline >= TimeUnit.MILLISECONDS.toNanos(KILL_MS) ? Step.GIVE_UP : Step.GO_ON;
            }
            if (now >= deadline) {
                timedOut = true;
                cpuAtTimeout = group == null || cpuStart < 0 ? -1 : group.cpuNanos() - cpuStart;
                kill(now);
            } else if (group != null && group.cpuNanos() - Math.max(0, cpuStart) > cpuBudget) {
                cpuExceeded = true;
                kill(now);
            } else if (!exitAsked && process instanceof ZygoteChild child && out.isDone() && err.isDone()
                    && group != null && group.pids().isEmpty()) {
                exitAsked = true; // the program is gone: its status is the zygote's to send, within its answer bound
                child.expectExit();
            }
            return Step.GO_ON;
        }

        private void kill(long now) {
            killedAt = now;
            lastKill = now;
            process.destroyForcibly();
        }
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

    /**
     * Waits for the readers. The pid namespace dies with the outer bwrap, which closes every pipe; if something
     * still holds one past the deadline, our ends are closed.
     */
    private void joinOrClose() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
        for (var reader : List.of(out, err)) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0 || !PipeThreads.await(reader, left)) {
                PipeThreads.closeQuietly(process.getInputStream());
                PipeThreads.closeQuietly(process.getErrorStream());
                PipeThreads.await(reader, TEARDOWN_MS);
            }
        }
    }
}
