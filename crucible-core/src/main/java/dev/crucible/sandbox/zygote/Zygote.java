package dev.crucible.sandbox.zygote;

import dev.crucible.os.Descriptors;
import dev.crucible.os.Linux;
import dev.crucible.os.ProcStatus;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.launch.ProcessSpawner;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One running zygote (docs/zygote.md): a pre-started interpreter in a box of its own that forks a child per run into
 * fresh namespaces, as the slot's uid, in the slot's cgroups. This class is the server's end of its control socket:
 * {@link #fork} sends the child's pipe ends and cgroup.procs descriptors, a reader thread gets each child's exit status.
 * Thread-safe.
 */
final class Zygote implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");
    /** How long a zygote may take to say it is ready (the interpreter's start-up, once). */
    private static final long START_MS = 10_000;

    private final Process process;
    private final int control;
    private final Map<String, ZygoteChild> children = new ConcurrentHashMap<>();
    /**
     * When each answer still owed was first owed ({@code System.nanoTime}), by {@code "fork ID"} (until "forked") and
     * {@code "exit ID"} (after a kill, or once the child is gone by our measure, until "exit").
     */
    private final Map<String, Long> unanswered = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private final Thread reader;
    private volatile boolean dead;
    /** Why the server gave up on this zygote (it is being replaced), or null. */
    private volatile String lost;
    /** Whether {@link #control} is closed; guarded by this. */
    private boolean closed;

    private Zygote(Process process, int control) {
        this.process = process;
        this.control = control;
        this.reader = Thread.ofPlatform().daemon().name("crucible-zygote").start(this::readAnswers);
    }

    /**
     * Starts a zygote from {@code argv} (the launcher's, see {@link LaunchCommand#zygoteArgv}) and connects to its
     * control socket in {@code dir} once it says it is ready; its stderr goes to {@code log}.
     */
    static Zygote start(ProcessSpawner spawner, List<String> argv, Path dir, Path log, ExecutorService io)
            throws IOException, InterruptedException {
        Process process = spawner.start(argv, log);
        boolean started = false;
        try {
            Future<String> ready = io.submit(() -> new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.US_ASCII)).readLine());
            String line;
            try {
                line = ready.get(START_MS, TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                line = null;
            }
            if (!"ready".equals(line)) {
                throw new IOException("the zygote did not start: " + lastLine(log));
            }
            Zygote zygote = new Zygote(process, Descriptors.connectSeqpacket(dir.resolve("control").toString()));
            zygote.interpreterPid(); // known from the start: once killed, a zombie or gone, it can no longer be found
            started = true;
            return zygote;
        } finally {
            if (!started) {
                process.destroyForcibly();
            }
        }
    }

    private static String lastLine(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return lines.isEmpty() ? "no message" : lines.getLast();
        } catch (IOException e) {
            return "no log";
        }
    }

    /** Whether it still answers: a dead zygote is replaced by the caller. */
    boolean alive() {
        return !dead && process.isAlive();
    }

    /**
     * Whether it has ended or is on its way out: its bubblewrap gone, or its interpreter gone, a zombie or with a
     * SIGKILL pending, as {@code /proc} says before bubblewrap follows it out (a request the kill cut off fails
     * before {@link #alive} turns false; that is a death, not a zygote that stopped answering).
     */
    boolean ended() {
        long pid = interpreter;
        return !alive() || (pid > 0 && ProcStatus.of(pid).map(s -> s.standing() == ProcStatus.Standing.ENDING)
                .orElse(true));
    }

    /**
     * Forks a child for one run.
     *
     * @param insideUid the child's uid in the zygote's user namespace (the slot's host uid through its map)
     * @param procsFiles the run's cgroup.procs files, which the child joins before anything else
     * @param tmpfsBytes the size of its fresh /tmp, /workspace and /dev/shm
     * @param rlimits {@code name=value,...} as crucible-launch takes them
     */
    ZygoteChild fork(int insideUid, List<Path> procsFiles, long tmpfsBytes, String rlimits) throws IOException {
        if (!alive()) {
            throw new IOException("the zygote has stopped");
        }
        List<Integer> theirs = new ArrayList<>();
        List<Integer> ours = new ArrayList<>();
        boolean sent = false;
        try {
            int[] in = pipe(theirs, ours, true);
            int[] out = pipe(theirs, ours, false);
            int[] err = pipe(theirs, ours, false);
            List<Integer> procs = new ArrayList<>();
            for (Path file : procsFiles) {
                int fd = Linux.openat2(-100, file.toString(), Linux.O_WRONLY | Linux.O_CLOEXEC, 0, 0);
                theirs.add(fd);
                procs.add(fd);
            }
            String id = Long.toString(ids.incrementAndGet());
            ZygoteChild child = new ZygoteChild(this, id, in[1], out[0], err[0]);
            children.put(id, child);
            int[] fds = new int[3 + procs.size()];
            fds[0] = in[0];
            fds[1] = out[1];
            fds[2] = err[1];
            for (int i = 0; i < procs.size(); i++) {
                fds[3 + i] = procs.get(i);
            }
            String request = "fork " + id + " " + insideUid + " " + tmpfsBytes + " " + rlimits;
            synchronized (this) {
                if (closed) {
                    throw new IOException("the zygote has stopped");
                }
                unanswered.put("fork " + id, System.nanoTime());
                try {
                    Descriptors.send(control, request.getBytes(StandardCharsets.US_ASCII), fds);
                } catch (IOException e) {
                    unanswered.remove("fork " + id);
                    children.remove(id);
                    throw new IOException("the zygote does not take requests (" + e.getMessage() + ")", e);
                }
            }
            sent = true;
            return child;
        } finally {
            theirs.forEach(Linux::close); // the child has its own copies now (or never will)
            if (!sent) {
                ours.forEach(Linux::close);
            }
        }
    }

    /** A pipe; the child's end is noted in {@code theirs}, ours in {@code ours}. */
    private static int[] pipe(List<Integer> theirs, List<Integer> ours, boolean childReads) throws IOException {
        int[] p = Descriptors.pipe();
        theirs.add(childReads ? p[0] : p[1]);
        ours.add(childReads ? p[1] : p[0]);
        return p;
    }

    /** Asks the zygote to SIGKILL the child's init (its pid namespace dies with it); the answer is its "exit". */
    void kill(ZygoteChild child) {
        try {
            synchronized (this) {
                if (!closed && children.containsKey(child.id())) { // a closed descriptor's number may be another socket's
                    owe(child.id());
                    Descriptors.send(control, ("kill " + child.id()).getBytes(StandardCharsets.US_ASCII));
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot ask the zygote to kill " + child, e);
        }
    }

    /** {@code child} has ended by our measure: its "exit" is owed, as if asked for now. */
    void expectExit(ZygoteChild child) {
        owe(child.id());
    }

    /**
     * Notes an answer owed for child {@code id}, unless it has ended: the reader forgets a child before its owed
     * answers, so a check after the note sees an end that raced with it.
     */
    private void owe(String id) {
        unanswered.putIfAbsent("exit " + id, System.nanoTime());
        if (!children.containsKey(id)) {
            unanswered.remove("exit " + id);
        }
    }

    /**
     * Whether the zygote's interpreter is stopped ({@code T}, by a signal, or {@code t}, by a tracer) as {@code /proc}
     * says: it answers nothing until someone continues it. A zygote that waits in the kernel or runs is not stopped.
     */
    boolean stopped() {
        long pid = interpreterPid();
        if (pid < 0) {
            return false;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state == 'T' || state == 't';
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** The host pid of the zygote's interpreter (the python under its bwrap, not a child it forked), or -1. */
    private long interpreterPid() {
        long known = interpreter;
        if (known > 0 && ProcessHandle.of(known).isPresent()) {
            return known;
        }
        long found = process.descendants()
                .filter(p -> p.info().command().orElse("").contains("python")
                        && !p.parent().flatMap(q -> q.info().command()).orElse("").contains("python"))
                .mapToLong(ProcessHandle::pid).findFirst().orElse(-1);
        interpreter = found;
        return found;
    }

    private volatile long interpreter = -1;

    /**
     * How long the oldest request still unanswered has waited (a fork without "forked", a kill without "exit"), in
     * nanoseconds at {@code now}; 0 when none waits. A zygote whose loop is stopped or blocked answers nothing.
     */
    long unansweredFor(long now) {
        long oldest = 0;
        for (long sent : unanswered.values()) {
            oldest = Math.max(oldest, now - sent);
        }
        return oldest;
    }

    /**
     * Gives up on this zygote: every child still known is marked lost with {@code why} (its run becomes a sandbox error,
     * or is run again where its program never started), then the zygote is killed, which ends its children's
     * namespaces with it.
     */
    void lose(String why) {
        lost = why;
        children.values().forEach(c -> c.lose(why));
        close();
    }

    private void readAnswers() {
        byte[] buffer = new byte[512];
        try {
            while (true) {
                int n = Descriptors.receive(control, buffer);
                if (n == 0) {
                    break;
                }
                String[] words = new String(buffer, 0, n, StandardCharsets.US_ASCII).split(" ", 3);
                ZygoteChild child = words.length > 1 ? children.get(words[1]) : null;
                if (child == null) {
                    continue;
                }
                switch (words[0]) {
                    case "exit" -> {
                        children.remove(words[1]);
                        unanswered.remove("fork " + words[1]);
                        unanswered.remove("exit " + words[1]);
                        child.exited(Integer.parseInt(words[2].strip()));
                    }
                    case "failed" -> {
                        children.remove(words[1]);
                        unanswered.remove("fork " + words[1]);
                        unanswered.remove("exit " + words[1]);
                        LOG.log(System.Logger.Level.WARNING, "the zygote refused a fork: " + words[2]);
                        child.exited(LaunchCommand.JOIN_FAILED);
                    }
                    default -> { // "forked"
                        unanswered.remove("fork " + words[1]);
                        child.forked();
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "lost the zygote's control channel: " + e.getMessage());
        } finally {
            dead = true;
            process.destroyForcibly();
            // its children were in its pid namespace's descendants: they are gone with it
            String why = lost != null ? lost : "the zygote ended while this run ran";
            children.values().forEach(c -> {
                c.lose(why);
                c.exited(128 + 9);
            });
            children.clear();
            unanswered.clear();
        }
    }

    /**
     * Kills the zygote (and with it every child still running) and closes the control socket. A zygote's whole tree is
     * killed, not only its launcher: a stopped zygote is SIGKILLed too (SIGKILL needs no cooperation).
     */
    @Override
    public void close() {
        dead = true;
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        try {
            process.waitFor(5, TimeUnit.SECONDS);
            reader.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            if (!closed) {
                closed = true;
                Linux.close(control);
            }
        }
    }
}
