package dev.crucible.sandbox.launch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the server does to one running gVisor sandbox of a slot or session uid, through runsc's control socket:
 * crucible-launch joins that sandbox's namespaces as its uid ({@link Gvisor#joined}), spawned as every launch is, and
 * runs one runsc command to its end. Given runsc's own process (started by {@link Gvisor#argv} or
 * {@link Gvisor#restoreArgv}), a child of this server.
 */
public final class GvisorControl {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");

    /** How long a save may take: a sandbox's memory written out, a few hundred MB a second here. */
    static final long SAVE_TIMEOUT_MS = 120_000;

    private final Gvisor gvisor;
    private final ProcessSpawner spawner;
    private final LaunchCommand c;
    private final int uid;
    private final Path logs;

    GvisorControl(Gvisor gvisor, ProcessSpawner spawner, LaunchCommand c, int uid, Path logs) {
        this.gvisor = gvisor;
        this.spawner = spawner;
        this.c = c;
        this.uid = uid;
        this.logs = logs;
    }

    /**
     * Saves the sandbox whole into {@code image} ({@link Gvisor#checkpointArgv}); it then ends.
     *
     * @throws IOException with runsc's own words when the save failed ({@code image}, made for it, is then removed);
     *     {@link java.nio.file.FileAlreadyExistsException} when {@code image} is there already (left as it is)
     */
    public void save(Process runsc, Path image) throws IOException, InterruptedException {
        List<String> argv = gvisor.checkpointArgv(c, uid, runsc.pid(), image); // refuses an image there already
        try {
            run(argv, SAVE_TIMEOUT_MS);
        } catch (IOException e) { // what it made is removed, never what was there before
            Gvisor.deleteTree(image);
            throw new IOException("cannot save the gVisor sandbox: " + e.getMessage(), e);
        }
    }

    /**
     * Sends {@code signal} to the sandbox's program (its first process, pid 1 of gVisor's kernel: a session's
     * interpreter): none of the host's processes of a gVisor sandbox is the program. Whether it was delivered.
     */
    public boolean signal(Process runsc, int signal) throws InterruptedException {
        List<String> argv = gvisor.joined(c, uid, runsc.pid());
        argv.addAll(List.of("kill", Gvisor.CONTAINER, Integer.toString(signal)));
        try {
            run(argv, 10_000);
            return true;
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot signal the gVisor sandbox: " + e.getMessage());
            return false;
        }
    }

    /** Runs one control command to its end; its last words when it fails. */
    private void run(List<String> argv, long timeoutMs) throws IOException, InterruptedException {
        Path log = Files.createTempFile(logs, "control-", ".log");
        try {
            Process p = spawner.start(argv, log);
            p.getOutputStream().close();
            p.getInputStream().close();
            boolean done = p.waitFor(timeoutMs, TimeUnit.MILLISECONDS);
            if (!done || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException(Files.readString(log).strip().lines().filter(l -> !l.startsWith("W"))
                        .reduce((a, b) -> b).orElse(done ? "exit " + p.exitValue() : "no answer in " + timeoutMs + " ms"));
            }
        } finally {
            Files.deleteIfExists(log);
        }
    }
}
