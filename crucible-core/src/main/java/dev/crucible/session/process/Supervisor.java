package dev.crucible.session.process;

import dev.crucible.sandbox.OutputListener;
import java.nio.channels.SocketChannel;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Commands in a session's sandbox, through its supervisor (crucible-supervisor.c, spoken by {@link SupervisorChannel}):
 * a foreground one followed by its caller to its end, a background one ({@link BackgroundProcess}) kept in this table,
 * the last {@link #MAX_BACKGROUND} of them. Thread-safe: commands of one session run at once. Ends (every waiting
 * command failing, every background process {@code lost}) when the socket closes, that is when the sandbox ends.
 */
public final class Supervisor implements AutoCloseable {
    /** The output kept of each background process: its last bytes, stdout and stderr together. */
    public static final int RING_BYTES = 256 * 1024;
    /** The background processes a sandbox keeps, running or ended (the oldest ended ones make room). */
    public static final int MAX_BACKGROUND = 64;
    /** The largest command, environment and stdin one request takes. */
    public static final int MAX_REQUEST_BYTES = SupervisorChannel.MAX_REQUEST_BYTES;
    private static final int SIGKILL = 9;

    private final SupervisorChannel channel;
    private final InstantSource clock;
    private final Runnable activity;
    /** Background processes by pid, oldest first; guarded by itself, as {@link #starting} is. */
    private final Map<Long, BackgroundProcess> background = new LinkedHashMap<>();
    /** Background processes asked for and not yet started: they count against {@link #MAX_BACKGROUND}. */
    private int starting;

    private Supervisor(SocketChannel channel, InstantSource clock, Runnable activity) {
        this.channel = new SupervisorChannel(channel);
        this.clock = clock;
        this.activity = activity;
    }

    /**
     * Follows the supervisor on {@code channel}; its HELLO is checked by the first command.
     *
     * @param activity called when a background process ends: the session was in use until then
     */
    public static Supervisor on(SocketChannel channel, InstantSource clock, Runnable activity) {
        return new Supervisor(channel, clock, activity);
    }

    /**
     * Runs {@code command} to its end, or kills it (its whole process group) at {@code timeoutMs}.
     *
     * @param outputCap the bytes kept of each stream; the rest is counted as cut, never buffered
     * @param listener gets the kept bytes as they come (a streaming caller)
     * @throws CommandException when the supervisor could not start it (no such program or directory, too many
     *     commands) or its sandbox ended under it
     */
    public CommandResult run(Command command, long timeoutMs, int outputCap, OutputListener listener)
            throws InterruptedException {
        long start = System.nanoTime();
        CappedOutput output = new CappedOutput(outputCap, listener);
        SupervisorChannel.Running run = new SupervisorChannel.Running(output::take, new CompletableFuture<>());
        channel.spawn(command, false, run);
        boolean timedOut = false;
        Integer status;
        try {
            status = run.exit.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            timedOut = true;
            channel.signal(run.pid, SIGKILL, true);
            status = channel.await(run.exit, "the command's end after its kill");
        } catch (ExecutionException e) {
            throw SupervisorChannel.failure(e);
        }
        long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        return new CommandResult(WaitStatus.exitCode(status), WaitStatus.signal(status),
                output.text(false), output.text(true), output.cut(false), output.cut(true), timedOut, durationMs,
                run.pid);
    }

    /**
     * Starts {@code command} in the background: it runs on after this call, until it ends, is signalled, its
     * {@code timeoutMs} passes (its process group killed) or the sandbox ends.
     *
     * @param keepStdin whether its stdin stays open after {@code command}'s stdin, for {@link #write}
     * @param timeoutMs when to kill it, or 0 for never
     * @param use whether it is use of the session while it runs ({@link #busy()})
     * @throws CommandException as {@link #run}, and {@code TOO_MANY} when {@link #MAX_BACKGROUND} are running
     */
    public BackgroundProcess start(Command command, boolean keepStdin, long timeoutMs, boolean use)
            throws InterruptedException {
        reserve();
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        // the process exists before its pid is known: its first output may come right after its STARTED
        BackgroundProcess process = new BackgroundProcess(command, clock.millis(), keepStdin, RING_BYTES, exit,
                use ? activity : () -> { });
        process.use(use);
        long pid;
        try {
            pid = channel.spawn(command, keepStdin, new SupervisorChannel.Running(process::take, exit));
        } catch (Throwable e) {
            release();
            throw e;
        }
        process.started(pid);
        keep(pid, process);
        if (timeoutMs > 0) {
            Thread.ofVirtual().name("crucible-process-deadline").start(() -> deadline(process, timeoutMs));
        }
        return process;
    }

    /**
     * Takes a place for a start, or refuses it: running processes and places taken are counted together, under the
     * table's lock, so starts at once cannot pass the cap together.
     */
    private void reserve() {
        synchronized (background) {
            if (background.values().stream().filter(BackgroundProcess::running).count() + starting >= MAX_BACKGROUND) {
                throw new CommandException(CommandException.Kind.TOO_MANY, MAX_BACKGROUND + " background processes"
                        + " are running in this session; signal one (or let one end) first");
            }
            starting++;
        }
    }

    /** Gives back the place of a start that failed. */
    private void release() {
        synchronized (background) {
            starting--;
        }
    }

    /**
     * Turns a start's place into its row, in one step under the table's lock: between the two it is always counted
     * once. The oldest ended rows make room.
     */
    private void keep(long pid, BackgroundProcess process) {
        synchronized (background) {
            starting--;
            background.put(pid, process);
            Iterator<BackgroundProcess> oldest = background.values().iterator();
            while (background.size() > MAX_BACKGROUND && oldest.hasNext()) {
                if (!oldest.next().running()) {
                    oldest.remove();
                }
            }
        }
    }

    /** Kills a background process's group at its time limit, unless it ended first. */
    private void deadline(BackgroundProcess process, long timeoutMs) {
        try {
            process.exit().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            process.timedOut();
            try {
                channel.signal(process.pid(), SIGKILL, true);
            } catch (CommandException | InterruptedException gone) {
                // the sandbox ended: so did the process
            }
        } catch (ExecutionException | InterruptedException e) {
            // ended with its sandbox
        }
    }

    /** The background processes this sandbox keeps, oldest first. */
    public List<BackgroundProcess> processes() {
        synchronized (background) {
            return new ArrayList<>(background.values());
        }
    }

    /** One background process by its pid in the sandbox. */
    public Optional<BackgroundProcess> process(long pid) {
        synchronized (background) {
            return Optional.ofNullable(background.get(pid));
        }
    }

    /**
     * Whether the supervisor has gone: it ends with the session's interpreter, before bubblewrap's own processes do,
     * so a sandbox still alive for a moment has no interpreter any more.
     */
    public boolean ended() {
        return channel.ended();
    }

    /** Whether {@code process} is this sandbox's (a pid means nothing in another sandbox of the session). */
    public boolean owns(BackgroundProcess process) {
        synchronized (background) {
            return background.get(process.pid()) == process;
        }
    }

    /** Whether a background process that counts as use is running: the session is in use. */
    public boolean busy() {
        synchronized (background) {
            return background.values().stream().anyMatch(p -> p.use() && p.running());
        }
    }

    /**
     * Sends {@code signal} to a background process, or to its whole process group.
     *
     * @return false when it had already ended
     */
    public boolean signal(BackgroundProcess process, int signal, boolean group) throws InterruptedException {
        if (!process.running()) {
            return false;
        }
        channel.signal(process.pid(), signal, group);
        return true;
    }

    /** Sizes a background process's terminal; false when it had ended. */
    public boolean resize(BackgroundProcess process, Terminal size) throws InterruptedException {
        if (!process.running()) {
            return false;
        }
        channel.resize(process.pid(), size);
        process.resized(size);
        return true;
    }

    /**
     * Queues {@code bytes} for a background process's stdin, then closes it when {@code close}.
     *
     * @return the bytes queued
     * @throws CommandException {@code STDIN_CLOSED} when it has ended or its stdin is closed, {@code STDIN_FULL} when
     *     it has not read what was written before (the supervisor holds at most 1 MiB), {@code TOO_LARGE}
     */
    public long write(BackgroundProcess process, byte[] bytes, boolean close) throws InterruptedException {
        if (!process.running()) {
            throw new CommandException(CommandException.Kind.STDIN_CLOSED, "the process has ended");
        }
        long n = channel.write(process.pid(), bytes, close);
        if (close) {
            process.stdinClosed();
        }
        return n;
    }

    /** Closes the socket: the supervisor ends, and the sandbox with it. */
    @Override
    public void close() {
        channel.close();
    }
}
