package dev.crucible.sandbox.zygote;

import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.launch.ProcessSpawner;
import dev.crucible.sandbox.launch.SyntheticEtc;
import dev.crucible.sandbox.uid.UidLayout;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Starts the zygotes of one launcher (docs/zygote.md): each one's uid (the end of the launcher's uid block) and user
 * namespace map (the slots' uids as its children's), its own control directory with what its children are made with
 * (their seccomp program, their init, their set-up library), its argv, and the first child that proves a new zygote on
 * this host. Thread-safe.
 */
final class ZygoteStarter {
    static final String PYTHON_ZYGOTE = resource("/dev/crucible/runtime/agents/python-zygote");
    /** crucible-init (without a C library: no start-up cost), or null when this build has none. */
    private static final byte[] INIT = builtBinary("crucible-init");
    /** The child's set-up (src/main/c/zygote-child.c), a library the zygote loads, or null when this build has none. */
    private static final byte[] CHILD_SETUP = builtBinary("crucible-zygote-child");
    /** Child uids inside a zygote's user namespace: slot N is {@code CHILD_UID_BASE + N} there. */
    static final int CHILD_UID_BASE = 1000;

    private final LaunchCommand command;
    private final ProcessSpawner spawner;
    private final ExecutorService io;
    private final Path workRoot;
    /** Where the launcher's uids lie; null when not root (no zygote then). */
    private final UidLayout layout;
    /** The program every child loads (a spawned sandbox's), copied into each zygote's control directory. */
    private final Path childSeccomp;
    /** The zygote's own program ({@code SeccompProgram.Socket.ZYGOTE}), loaded by its bwrap. */
    private final Supplier<Path> zygoteSeccomp;
    /** The synthetic /etc the zygote's box binds: its binds' mount points are made once, when a zygote starts. */
    private final SyntheticEtc etc;
    private final Map<List<Object>, Integer> uids = new ConcurrentHashMap<>();
    /** Zygotes started so far (each gets a directory of its own); guarded by this. */
    private int starts;

    /**
     * @param layout where the launcher's uids lie (zygotes take theirs from its zygote range), or null when not root
     */
    ZygoteStarter(LaunchCommand command, ProcessSpawner spawner, ExecutorService io, Path workRoot, UidLayout layout,
            Path childSeccomp, Supplier<Path> zygoteSeccomp,
            SyntheticEtc etc) {
        this.command = command;
        this.spawner = spawner;
        this.io = io;
        this.workRoot = workRoot;
        this.layout = layout;
        this.childSeccomp = childSeccomp;
        this.zygoteSeccomp = zygoteSeccomp;
        this.etc = etc;
    }

    /** What this build lacks for a zygote, as a sentence, or null when it has everything. */
    String missing() {
        return !command.viaHelper() ? "crucible-launch is not in this build (the sh + setpriv chain cannot map uids)"
                : CHILD_SETUP == null ? "the zygote's child set-up (zygote-child.c) is not in this build"
                : null;
    }

    /** The uid of slot uid {@code slotUid}'s child inside a zygote's user namespace. */
    int insideUid(int slotUid) {
        return CHILD_UID_BASE + (int) (slotUid - layout.base());
    }

    /** A zygote ready to be started: its control directory, its log and its launcher's argv. */
    record Prepared(Path dir, Path log, List<String> argv) {}

    /**
     * Makes the directory of a new zygote of {@code key}'s kind, started from {@code spec}: owned by the kind's uid, with
     * the children's seccomp program, their init and their set-up library in it; and its argv.
     */
    Prepared prepare(List<Object> key, SandboxSpec spec) throws IOException {
        int uid;
        int index;
        synchronized (this) {
            // one uid per kind of zygote for the launcher's life (a replacement takes its predecessor's, never a live
            // zygote's); one directory per start
            Integer known = uids.get(key);
            if (known == null && uids.size() >= UidLayout.MAX_ZYGOTES) {
                throw new IOException("every one of the " + UidLayout.MAX_ZYGOTES + " zygote uids is taken");
            }
            uid = known != null ? known : (int) layout.zygoteUid(uids.size());
            uids.put(key, uid);
            index = starts++;
        }
        Path dir = workRoot.resolve("zygote-" + index);
        Files.createDirectories(dir);
        Files.setAttribute(dir, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Path program = dir.resolve("seccomp.bpf"); // the children's program, read once by the zygote at its start
        Files.copy(childSeccomp, program, StandardCopyOption.REPLACE_EXISTING);
        Files.setAttribute(program, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(program, PosixFilePermissions.fromString("r--------"));
        Path init = dir.resolve("init"); // each child namespace's pid 1: crucible-init, else crucible-launch --init
        if (INIT != null) {
            Files.write(init, INIT);
        } else {
            Files.copy(command.helper(), init, StandardCopyOption.REPLACE_EXISTING);
        }
        Files.setPosixFilePermissions(init, PosixFilePermissions.fromString("r-xr-xr-x"));
        Path setup = dir.resolve("zygote-child.so"); // the children's set-up, loaded by the zygote at its start
        Files.write(setup, CHILD_SETUP);
        Files.setPosixFilePermissions(setup, PosixFilePermissions.fromString("r-xr-xr-x"));
        Path log = workRoot.resolve("zygote-" + index + ".log");
        etc.addMountPoints(spec); // its children mount nothing from the host: the box is made once
        String map = "0 " + uid + " 1," + CHILD_UID_BASE + " " + layout.base() + " " + layout.slots();
        return new Prepared(dir, log, command.zygoteArgv(uid, map, spec, dir, PYTHON_ZYGOTE, zygoteSeccomp.get()));
    }

    /** Starts the zygote {@code prepared} (not yet proved by a child). */
    Zygote start(Prepared prepared) throws IOException, InterruptedException {
        return Zygote.start(spawner, prepared.argv(), prepared.dir(), prepared.log(), io);
    }

    /**
     * Forks one child that runs an empty program, as the launch's slot uid into its cgroups, exactly as the run's own
     * child will be made: a host where the zygote starts but its children cannot join their cgroups or make their
     * namespaces (an older cgroup v2 kernel, a container's seccomp profile, a masked /proc) is found here, once, and its
     * runs are spawned. The probe has ended before the run starts (its CPU is not the run's: that is counted from the
     * run's start).
     */
    void probe(Zygote zygote, SandboxSpec spec, int slotUid, Cgroups.RunGroup group)
            throws IOException, InterruptedException {
        ZygoteChild child = zygote.fork(insideUid(slotUid),
                group == null ? List.of() : group.procsFiles(), command.tmpfsBytes(spec), "");
        try (var in = child.getOutputStream()) {
            in.write("0000000400000000pass".getBytes(StandardCharsets.US_ASCII)); // the pool agent's frame
        } catch (IOException e) {
            // it died before reading: its status says why
        }
        Future<byte[]> err = io.submit(() -> child.getErrorStream().readAllBytes());
        child.getInputStream().close();
        if (!child.waitFor(10, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new IOException("the zygote's first child did not finish");
        }
        String stderr;
        try {
            stderr = new String(err.get(5, TimeUnit.SECONDS), StandardCharsets.UTF_8).strip();
        } catch (ExecutionException | TimeoutException e) {
            stderr = "";
        } finally {
            child.getErrorStream().close();
        }
        if (child.exitValue() != 0) {
            throw new IOException("the zygote's children cannot start here: "
                    + (stderr.isEmpty() ? "exit " + child.exitValue() : stderr.lines().findFirst().orElse(stderr)));
        }
    }

    private static byte[] builtBinary(String name) {
        try {
            return LaunchCommand.builtBinary(name);
        } catch (IOException e) {
            return null;
        }
    }

    /** A text resource of this JAR, by its absolute name. */
    static String resource(String name) {
        try (InputStream in = ZygoteStarter.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + name, e);
        }
    }
}
