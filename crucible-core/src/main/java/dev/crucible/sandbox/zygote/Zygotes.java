package dev.crucible.sandbox.zygote;

import dev.crucible.health.PartStatus;
import dev.crucible.health.Replacements;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.launch.ProcessSpawner;
import dev.crucible.sandbox.launch.SyntheticEtc;
import dev.crucible.sandbox.uid.UidLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.Supplier;

/**
 * The zygotes of one launcher (docs/zygote.md): which launches a zygote serves, one zygote per distinct warm-pool
 * sandbox (the Python agent's command, environment, root and binds: one per runtime and image), started on first use
 * and replaced when it dies. Where this host lacks what a zygote needs, {@link #unavailable()} says why and every
 * launch is spawned. Thread-safe. Public for the launcher, which asks it for every launch it may fork.
 */
public final class Zygotes implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");
    /** The agent whose launches a zygote serves: the Python warm-pool agent. */
    static final String PYTHON_AGENT = ZygoteStarter.resource("/dev/crucible/runtime/agents/python");

    private final LaunchCommand command;
    private final ZygoteStarter starter;
    private final String unavailable;
    private final Map<List<Object>, Zygote> running = new ConcurrentHashMap<>();
    private final Map<List<Object>, String> failed = new ConcurrentHashMap<>();
    /** The launch each kind of zygote was first started for: what a replacement is started from. */
    private final Map<List<Object>, SandboxSpec> specs = new ConcurrentHashMap<>();
    /** Kinds whose zygote is being replaced in the background: their launches are spawned meanwhile. */
    private final Set<List<Object>> replacing = ConcurrentHashMap.newKeySet();
    private final Replacements replacements;
    /** Checks every zygote's answers; started with the first zygote. */
    private final ZygoteWatchdog watchdog = new ZygoteWatchdog(running, this::replace);
    private volatile boolean closed;

    /**
     * @param io the launcher's platform threads (a zygote's first answer, a probe's stderr)
     * @param uids where the launcher's uids lie (zygotes take theirs from its zygote range), or null when not root
     * @param disabled why the operator turned zygotes off, or null
     * @param childSeccomp the program every child loads (a spawned sandbox's)
     * @param zygoteSeccomp the zygote's own program ({@code SeccompProgram.Socket.ZYGOTE}), written when first asked for
     */
    public Zygotes(LaunchCommand command, ProcessSpawner spawner, ExecutorService io, Path workRoot, UidLayout uids,
            String disabled, Path childSeccomp,
            Supplier<Path> zygoteSeccomp, SyntheticEtc etc, Replacements replacements) {
        this.replacements = replacements;
        this.command = command;
        this.starter = new ZygoteStarter(command, spawner, io, workRoot, uids, childSeccomp,
                zygoteSeccomp, etc);
        this.unavailable = disabled != null ? disabled
                : uids == null ? "the server does not run as root (a zygote maps the slots' uids into its namespace)"
                : starter.missing();
    }

    /** Why no zygote runs on this host, as a sentence, or null when they do. */
    String unavailable() {
        return unavailable;
    }

    /**
     * Whether {@code spec} is a launch a zygote makes: the Python warm-pool agent of the host's (or the operator's
     * rootfs') interpreter, nothing per-run bound in, and no zygote of its kind failed or being replaced. Never in an
     * image: a zygote holds capabilities in its namespace while its interpreter starts, and an image's interpreter, its
     * standard library, {@code sitecustomize}, {@code .pth} files and {@code PYTHON*} settings are the image's code.
     */
    public boolean serves(SandboxSpec spec) {
        List<String> argv = spec.command();
        if (unavailable != null || argv.size() != 4 || !"-c".equals(argv.get(1)) || !argv.get(2).equals(PYTHON_AGENT)
                || !argv.get(0).endsWith("python3") || spec.egress() != null || spec.workspace() != null
                || spec.isolation() != Isolation.NAMESPACES || !spec.files().isEmpty() || spec.buildDir() != null || spec.init()
                || spec.root() instanceof SandboxRoot.Writable || spec.root() instanceof SandboxRoot.Image) {
            return false;
        }
        List<Object> key = key(spec);
        return !failed.containsKey(key) && !replacing.contains(key);
    }

    /**
     * Forks a child for {@code spec} as the slot's uid into {@code group}, starting the zygote first if needed.
     *
     * @throws IOException when the zygote cannot be started or asked; the caller then spawns
     */
    public ZygoteChild fork(SandboxSpec spec, int slotUid, Cgroups.RunGroup group)
            throws IOException, InterruptedException {
        Zygote zygote = zygoteFor(spec, slotUid, group);
        long tmpfs = command.tmpfsBytes(spec);
        try {
            return zygote.fork(starter.insideUid(slotUid), group == null ? List.of() : group.procsFiles(),
                    tmpfs, command.rlimitSpec(slotUid, group == null, spec));
        } catch (IOException e) {
            if (zygote.ended()) { // killed: the request failed before its bubblewrap followed it out
                replace(key(spec), zygote, Replacements.Reason.DIED, "it ended");
            } else if (zygote.alive()) { // it stopped reading its control socket
                replace(key(spec), zygote, Replacements.Reason.UNANSWERED, e.getMessage());
            }
            throw e;
        }
    }

    private static List<Object> key(SandboxSpec spec) {
        return List.of(spec.command(), spec.env(), spec.root(), spec.readOnlyBindsIfPresent(), spec.limits().memoryMb());
    }

    /** The running zygote for {@code spec}; a new one is proved by a child of the launch's slot uid and cgroups. */
    private synchronized Zygote zygoteFor(SandboxSpec spec, int slotUid, Cgroups.RunGroup group)
            throws IOException, InterruptedException {
        List<Object> key = key(spec);
        Zygote zygote = running.get(key);
        if (zygote != null && zygote.alive()) {
            return zygote;
        }
        if (zygote != null || replacing.contains(key)) {
            replace(key, zygote, Replacements.Reason.DIED, "it ended");
            throw new IOException("the zygote is being replaced");
        }
        if (closed) {
            throw new IOException("the launcher is closing");
        }
        specs.putIfAbsent(key, spec);
        zygote = startOne(key, spec);
        try {
            starter.probe(zygote, spec, slotUid, group);
        } catch (IOException e) {
            zygote.close();
            failed.put(key, e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "no zygote for " + spec.command().getFirst() + " (its runs are spawned): "
                    + e.getMessage());
            throw e;
        }
        running.put(key, zygote);
        watchdog.start(); // from here on, a zygote that died or left a request unanswered is replaced
        return zygote;
    }

    /**
     * Gives up on {@code zygote} (killed with every child it still has: a run already started becomes a sandbox error,
     * one whose program never started is run again by the caller) and starts its successor in the background; the
     * kind's launches are spawned until it is ready. Once per zygote.
     */
    void replace(List<Object> key, Zygote zygote, Replacements.Reason reason, String detail) {
        synchronized (this) {
            if (closed || (zygote != null && running.get(key) != zygote) || (zygote == null && replacing.contains(key))) {
                return;
            }
            running.remove(key);
            replacing.add(key);
        }
        replacements.replaced(Replacements.Part.ZYGOTE, reason, "the " + name(key) + " zygote", detail
                + "; its runs are spawned until a new one is ready");
        Thread.ofPlatform().daemon().name("crucible-zygote-start").start(() -> {
            try {
                if (zygote != null) {
                    zygote.lose("the zygote was replaced (" + detail + ")");
                }
                Zygote next = startOne(key, specs.get(key));
                synchronized (this) {
                    if (closed) {
                        next.close();
                    } else {
                        running.put(key, next);
                    }
                }
            } catch (IOException | RuntimeException e) {
                failed.put(key, "its replacement did not start: " + e.getMessage());
                LOG.log(System.Logger.Level.WARNING, "the " + name(key) + " zygote's replacement did not start (its runs"
                        + " are spawned from now on): " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                replacing.remove(key);
            }
        });
    }

    /** A kind of zygote as people read it: {@code python} (the host's), or {@code python@<rootfs>}. */
    private static String name(List<Object> key) {
        @SuppressWarnings("unchecked")
        List<String> command = (List<String>) key.get(0);
        String interpreter = Path.of(command.getFirst()).getFileName().toString().replaceFirst("3$", "");
        return key.get(2) instanceof SandboxRoot.Usr(Path dir) ? interpreter + "@" + dir : interpreter;
    }

    /** The zygotes' parts for readiness: degraded while one is being replaced or could not start (runs are spawned). */
    public List<PartStatus> parts() {
        if (unavailable != null) {
            return List.of();
        }
        List<PartStatus> parts = new ArrayList<>();
        for (List<Object> key : specs.keySet()) {
            String part = "zygote:" + name(key);
            if (replacing.contains(key)) {
                parts.add(PartStatus.degraded(part, "being replaced; its runs are spawned meanwhile"));
            } else if (failed.containsKey(key)) {
                parts.add(PartStatus.degraded(part, "not running (" + failed.get(key)
                        + "); its runs are spawned"));
            } else {
                parts.add(PartStatus.ok(part));
            }
        }
        return parts;
    }

    /** Starts a zygote of {@code key}'s kind from {@code spec} (not yet proved by a child). */
    private Zygote startOne(List<Object> key, SandboxSpec spec) throws IOException, InterruptedException {
        ZygoteStarter.Prepared prepared = starter.prepare(key, spec);
        try {
            return starter.start(prepared);
        } catch (IOException e) {
            failed.put(key, e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "no zygote for " + spec.command().getFirst() + " (its runs are spawned): "
                    + e.getMessage());
            throw e;
        }
    }

    /** The reasons zygotes could not start, one per failed kind of launch (shown by {@code crucible runtimes}). */
    List<String> failures() {
        return new ArrayList<>(failed.values());
    }

    /**
     * Which isolation path is in force, as {@code crucible runtimes} prints it: the zygote for Python (and how many run),
     * or spawn with the reason.
     */
    public String describe() {
        if (unavailable != null) {
            return "isolation path: spawn for every runtime (no zygote: " + unavailable + ")";
        }
        if (!failed.isEmpty()) {
            return "isolation path: spawn for every runtime (the Python zygote failed: " + failed.values().iterator().next()
                    + ")";
        }
        return "isolation path: zygote for python (" + count() + " running; a child forked per run into fresh"
                + " namespaces, docs/zygote.md); spawn for the other runtimes, image runtimes (an image's interpreter"
                + " and site code never run in a zygote), sessions and runs with files or egress";
    }

    /** How many zygotes run now. */
    int count() {
        return (int) running.values().stream().filter(Zygote::alive).count();
    }

    @Override
    public void close() {
        List<Zygote> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(running.values());
            running.clear();
        }
        watchdog.close();
        all.forEach(Zygote::close);
    }
}
