package dev.crucible.sandbox.zygote;

import dev.crucible.os.Descriptors;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One child forked by a {@link Zygote}, seen as a {@link Process} so that the launcher supervises it exactly as a
 * spawned sandbox: its three pipes are ours, its exit status is the one its parent (the zygote) reads with
 * {@code waitpid} and sends us, and killing it is asking the zygote to SIGKILL the child's init, which takes its whole
 * pid namespace with it (and, at once, SIGKILLing the members of the run's cgroup). Verdicts other than the exit status come from the run's cgroup, as for any sandbox.
 * Public for the launcher's supervision, which asks what the zygote said about it.
 */
public final class ZygoteChild extends Process {
    private final Zygote zygote;
    private final String id;
    private final OutputStream stdin;
    private final InputStream stdout;
    private final InputStream stderr;
    /** Counted down once, when the zygote reports the end (a timed wait on it throws nothing: it is polled). */
    private final CountDownLatch ended = new CountDownLatch(1);
    private volatile int status;
    private volatile Runnable killGroup = () -> { };
    /** Whether the zygote said it forked this child. */
    private volatile boolean forked;
    /** Why the zygote was given up while this child was known to it, or null. */
    private volatile String lost;

    ZygoteChild(Zygote zygote, String id, int stdin, int stdout, int stderr) {
        this.zygote = zygote;
        this.id = id;
        this.stdin = Descriptors.output(stdin);
        this.stdout = Descriptors.input(stdout);
        this.stderr = Descriptors.input(stderr);
    }

    /** Also SIGKILLs every member of the run's cgroup when killed: at once, not after a message to the zygote. */
    public void killGroupToo(Runnable kill) {
        this.killGroup = kill;
    }

    String id() {
        return id;
    }

    /** The zygote answered "forked": the child exists (its program may have started). */
    void forked() {
        forked = true;
    }

    /** Whether this child's zygote is stopped now (SIGSTOP, a tracer), as /proc says. */
    public boolean zygoteStopped() {
        return zygote.stopped();
    }

    /** Whether the zygote ever said it forked this child: if not, no code of the run can have started. */
    public boolean wasForked() {
        return forked;
    }

    /**
     * The child's program is gone (its cgroup is empty, its pipes closed): the zygote owes its "exit" from now on, within
     * its answer bound, or it is replaced.
     */
    public void expectExit() {
        zygote.expectExit(this);
    }

    /**
     * The server killed the run and its cgroup is empty, its pipes closed: the child has ended by that SIGKILL, whether or
     * not its zygote (busy, or stuck) has said so yet. A later "exit" from the zygote changes nothing.
     */
    public void endedByOurKill() {
        exited(128 + 9);
    }

    /** Marks the child lost with its zygote, which the server gave up on for {@code why}. */
    void lose(String why) {
        if (lost == null) {
            lost = why;
        }
    }

    /** Why the child's zygote was given up while it was known to it, or null. */
    public String lost() {
        return lost;
    }

    /** Its init's status as the zygote read it: an exit code, or 128 + the signal that ended it. */
    synchronized void exited(int status) {
        if (ended.getCount() > 0) {
            this.status = status;
            ended.countDown();
        }
    }

    @Override
    public OutputStream getOutputStream() {
        return stdin;
    }

    @Override
    public InputStream getInputStream() {
        return stdout;
    }

    @Override
    public InputStream getErrorStream() {
        return stderr;
    }

    @Override
    public int waitFor() throws InterruptedException {
        ended.await();
        return status;
    }

    @Override
    public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
        return ended.await(timeout, unit);
    }

    @Override
    public int exitValue() {
        if (ended.getCount() > 0) {
            throw new IllegalThreadStateException("the zygote's child " + id + " is running");
        }
        return status;
    }

    @Override
    public boolean isAlive() {
        return ended.getCount() > 0;
    }

    @Override
    public void destroy() {
        destroyForcibly();
    }

    @Override
    public Process destroyForcibly() {
        if (ended.getCount() > 0) {
            killGroup.run();
            zygote.kill(this);
        }
        return this;
    }

    @Override
    public String toString() {
        return "zygote child " + id;
    }
}
