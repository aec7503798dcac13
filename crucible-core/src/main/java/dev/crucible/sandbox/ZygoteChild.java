package dev.crucible.sandbox;

import dev.crucible.os.Descriptors;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One child forked by a {@link Zygote}, seen as a {@link Process} so that {@link Launched} supervises it exactly as a
 * spawned sandbox: its three pipes are ours, its exit status is the one its parent (the zygote) reads with
 * {@code waitpid} and sends us, and killing it is asking the zygote to SIGKILL the child's init, which takes its whole
 * pid namespace with it (and, at once, SIGKILLing the members of the run's cgroup). Verdicts other than the exit status come from the run's cgroup, as for any sandbox.
 */
final class ZygoteChild extends Process {
    private final Zygote zygote;
    private final String id;
    private final OutputStream stdin;
    private final InputStream stdout;
    private final InputStream stderr;
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();
    private volatile Runnable killGroup = () -> { };

    ZygoteChild(Zygote zygote, String id, int stdin, int stdout, int stderr) {
        this.zygote = zygote;
        this.id = id;
        this.stdin = Descriptors.output(stdin);
        this.stdout = Descriptors.input(stdout);
        this.stderr = Descriptors.input(stderr);
    }

    /** Also SIGKILLs every member of the run's cgroup when killed: at once, not after a message to the zygote. */
    void killGroupToo(Runnable kill) {
        this.killGroup = kill;
    }

    String id() {
        return id;
    }

    /** Its init's status as the zygote read it: an exit code, or 128 + the signal that ended it. */
    void exited(int status) {
        exit.complete(status);
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
        try {
            return exit.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
        try {
            exit.get(timeout, unit);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public int exitValue() {
        Integer status = exit.getNow(null);
        if (status == null) {
            throw new IllegalThreadStateException("the zygote's child " + id + " is running");
        }
        return status;
    }

    @Override
    public boolean isAlive() {
        return !exit.isDone();
    }

    @Override
    public void destroy() {
        destroyForcibly();
    }

    @Override
    public Process destroyForcibly() {
        if (!exit.isDone()) {
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
