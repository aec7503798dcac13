package dev.crucible.sandbox.bwrap;

import dev.crucible.health.PartStatus;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxUnavailableException;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.uid.UidLayout;
import dev.crucible.sandbox.uid.UidLease;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The run slots of one launcher and what goes with them: at most {@link SandboxConfig#slots()} runs at once; when
 * root, slots and sessions run as the uids of a {@link UidLayout} leased host-wide (see docs/sandbox-recipe.md,
 * Per-slot uids); each slot's next cgroups made ahead, off the run's
 * path; and the teardown that sweeps a finished run's cgroups before its slot is free again. Thread-safe.
 */
final class Slots {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");
    private static final long TEARDOWN_MS = 3_000;

    /** A slot whose teardown has taken longer than this is stuck (readiness); every slot stuck this long, not live. */
    static final Duration STUCK = Duration.ofSeconds(15);
    static final Duration STUCK_FOR_GOOD = Duration.ofMinutes(2);

    private final int count;
    private final Cgroups cgroups;
    private final ExecutorService io;
    private final BlockingQueue<Integer> free;
    private final Map<Integer, Cgroups.RunGroup> prepared = new ConcurrentHashMap<>();
    /** The group the sessions' groups nest in ({@link #limitSessions}); null until then. */
    private volatile Cgroups sessionCgroups;
    /** Names of this instance's run groups start with it: {@code run-<pid>-<instance tag>}. */
    private final String groupPrefix = "run-" + ProcessHandle.current().pid() + "-" + Integer.toHexString(
            ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
    /** The host-wide lease on this launcher's uids when root (no two Crucible processes share a uid), else null. */
    private final UidLease lease;
    /** Where this launcher's uids lie when root, else null. */
    private final UidLayout layout;
    private final int ownUid;
    private volatile boolean closing;
    /** Slots whose teardown is under way, with when it began ({@code System.nanoTime}). */
    private final Map<Integer, Long> releasing = new ConcurrentHashMap<>();

    /**
     * Takes the uid block when {@code root}.
     *
     * @param io the launcher's platform threads, for the cgroup file I/O of each teardown
     * @throws IllegalArgumentException when there are more slots than uids below the session uids, or the leased
     *     block passes the largest int (the uids this launcher hands out are ints)
     * @throws SandboxUnavailableException when every uid range tried overlaps one leased by another process
     */
    Slots(SandboxConfig config, Cgroups cgroups, boolean root, int ownUid, ExecutorService io) {
        this.count = config.slots();
        this.cgroups = cgroups;
        this.io = io;
        this.ownUid = ownUid;
        if (root) {
            new UidLayout(config.slotUidBase(), config.slots()); // refuses a slot count or base out of range
            this.lease = UidLease.acquire(UidLease.DIRECTORY, config.slotUidBase());
            try {
                this.layout = new UidLayout(lease.base(), config.slots());
                if (layout.block().last() > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("sandbox uids " + layout.block() + " pass " + Integer.MAX_VALUE
                            + ": set CRUCIBLE_SLOT_UID_BASE lower");
                }
            } catch (RuntimeException e) {
                lease.close();
                throw e;
            }
            if (!lease.skipped().isEmpty()) {
                LOG.log(System.Logger.Level.INFO, "sandbox uids " + String.join(", ", lease.skipped())
                        + " overlap this one's (" + new UidLayout(config.slotUidBase(), config.slots()).block()
                        + "); this one uses " + layout.block());
            }
        } else {
            this.lease = null;
            this.layout = null;
        }
        this.free = new ArrayBlockingQueue<>(count);
        for (int i = 0; i < count; i++) {
            free.add(i);
        }
    }

    /** Waits for a free slot and takes it; the claim gives it back when released. */
    Claim take() throws InterruptedException {
        return new Claim(free.take());
    }

    /**
     * One taken slot and what its run holds until {@link #release}: its cgroups and a build directory lent to its
     * uid. Released once however often {@link #release} is called; thread-safe.
     */
    final class Claim {
        private final int slot;
        private final AtomicBoolean released = new AtomicBoolean();
        private volatile Cgroups.RunGroup group;
        private volatile Path lentBuildDir;

        private Claim(int slot) {
            this.slot = slot;
        }

        /** The host uid the run becomes, or -1 when sandboxes run as the server's own uid. */
        int uid() {
            return layout != null ? (int) layout.slotUid(slot) : -1;
        }

        /** The run's empty cgroups (those made ahead for this slot, else new ones), kept here; null without cgroups. */
        Cgroups.RunGroup takeGroups() throws IOException {
            if (cgroups instanceof Cgroups.None) {
                return null;
            }
            Cgroups.RunGroup made = prepared.remove(slot);
            group = made != null ? made : cgroups.prepare(groupPrefix + randomHex());
            return group;
        }

        /** Gives {@code buildDir} to the run's uid until the release gives it back to the server's. */
        void lend(Path buildDir) throws IOException {
            Files.setAttribute(buildDir, "unix:uid", uid());
            lentBuildDir = buildDir;
        }

        /**
         * In the background: sweeps and removes the run's cgroups, makes the slot's next ones, takes the build
         * directory back, then frees the slot. A run's answer does not wait for its cgroup to empty and go; the slot
         * does.
         */
        void release() {
            if (released.compareAndSet(false, true)) {
                Cgroups.RunGroup g = group;
                Path dir = lentBuildDir;
                releasing.put(slot, System.nanoTime());
                io.execute(() -> Slots.this.release(slot, g, dir)); // cgroup file I/O: a platform thread
            }
        }
    }

    /** The host uid of session {@code number}, or -1 when sandboxes run as the server's own uid. */
    int sessionUid(int number) {
        return layout != null ? (int) layout.sessionUid(number) : -1;
    }

    /**
     * The first of session {@code number}'s block of host uids for a root inside (see
     * {@code LaunchCommand.rootedArgv}): one block per session uid, so no two sessions of any server on this host
     * share one; -1 when not root, or when the block would pass the largest uid.
     */
    long sessionRootUid(int number) {
        return UidLayout.rootUid(sessionUid(number));
    }

    /** First uid of the leased block, or -1 when not root. */
    int uidBase() {
        return layout != null ? (int) layout.base() : -1;
    }

    /** Where this launcher's uids lie, or null when not root (sandboxes run as the server's own uid). */
    UidLayout layout() {
        return layout;
    }

    /**
     * Puts this launcher's sessions in one group of their own whose memory is held to {@code bytes} (the sessions'
     * budget; each session keeps its own limit): sessions admitted by what they are expected to use may together
     * overcommit, and then the kernel reclaims and OOM-kills inside that group, never the server or the host. Their
     * CPU together weighs as much as all the slots' runs. Sessions made before keep their groups.
     */
    void limitSessions(long bytes) throws IOException {
        if (!(cgroups instanceof Cgroups.None)) {
            // run-<pid>-sessions<tag>: swept when this process is gone, and not counted among the runs' groups
            sessionCgroups = cgroups.nested(groupPrefix.replaceFirst("-([0-9a-f]+)$", "-sessions$1"), bytes, count);
        }
    }

    /** The memory the sessions' group is charged now (every session together); -1 without one. */
    long sessionsMemoryBytes() {
        Cgroups group = sessionCgroups;
        return group == null ? -1 : group.memoryUsedBytes();
    }

    /** New cgroups of a session with {@code limits} and {@code cpus} cores written; null without cgroups. */
    Cgroups.RunGroup sessionGroup(Limits limits, double cpus) throws IOException {
        if (cgroups instanceof Cgroups.None) {
            return null;
        }
        Cgroups parent = sessionCgroups == null ? cgroups : sessionCgroups;
        Cgroups.RunGroup group = parent.create(groupPrefix + "s" + randomHex(), limits);
        try {
            group.cpuQuota(cpus);
            return group;
        } catch (IOException e) {
            group.destroy();
            throw e;
        }
    }

    /** Sweeps and removes a session's cgroups in the background. */
    void teardownLater(Cgroups.RunGroup group) {
        io.execute(() -> teardown(group));
    }

    private void release(int slot, Cgroups.RunGroup group, Path buildDir) {
        try {
            if (group != null && emptied(group) && !closing && group.reuse()) {
                prepared.put(slot, group); // the slot's next run starts in the same groups, measured afresh
                if (closing && prepared.remove(slot, group)) {
                    group.destroy(); // the launcher closed meanwhile and may have swept the groups made ahead
                }
                group = null;
            } else if (group != null) {
                group.destroy();
            }
            if (!(cgroups instanceof Cgroups.None) && !closing && !prepared.containsKey(slot)) {
                try {
                    prepared.put(slot, cgroups.prepare(groupPrefix + randomHex()));
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, "cannot prepare the next run's cgroups", e);
                }
            }
            if (buildDir != null) {
                try {
                    Files.setAttribute(buildDir, "unix:uid", ownUid);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, "cannot take back " + buildDir, e);
                }
            }
        } finally {
            releasing.remove(slot);
            free.add(slot);
        }
    }

    /**
     * How many slots have been in their teardown for longer than {@code bound} at {@code now}: a run's processes that
     * outlive every kill (a process in uninterruptible sleep) keep its slot from coming back.
     */
    int stuck(long now, Duration bound) {
        return (int) releasing.values().stream().filter(since -> now - since > bound.toNanos()).count();
    }

    /** The slots as a part of the launcher's readiness at {@code now}: down when every one is {@link #STUCK}. */
    PartStatus readiness(long now) {
        int stuck = stuck(now, STUCK);
        String use = (count - free()) + " of " + count + " in use";
        return stuck == 0 ? PartStatus.ok("slots", use)
                : stuck < count ? PartStatus.degraded("slots", stuck + " of " + count
                        + " stuck in their teardown for over " + STUCK.toSeconds() + " s (" + use + ")")
                : PartStatus.down("slots", "every slot has been stuck in its teardown for over "
                        + STUCK.toSeconds() + " s: no run can start");
    }

    /** Whether every slot has been in its teardown for longer than {@link #STUCK_FOR_GOOD} at {@code now}: not live. */
    boolean stuckForGood(long now) {
        return stuck(now, STUCK_FOR_GOOD) >= count;
    }

    /** How many slots there are. */
    int count() {
        return count;
    }

    /** How many slots are free now. */
    int free() {
        return free.size();
    }

    /** Names of cgroups need to be unique, not secret. */
    private static String randomHex() {
        byte[] b = new byte[8];
        ThreadLocalRandom.current().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /**
     * The pid namespace dies with the outer bwrap, which takes every process of the run with it; the cgroup sweep is
     * the second net for anything that outlives it (see docs/sandbox-recipe.md, Teardown).
     */
    private static void awaitEmpty(Cgroups.RunGroup group) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
        long pause = 1;
        while (!group.pids().isEmpty()) {
            if (System.nanoTime() > deadline) {
                LOG.log(System.Logger.Level.WARNING, "sandbox processes outlived the teardown deadline; killing");
                group.killAll();
                deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TEARDOWN_MS);
            }
            Thread.sleep(pause);
            pause = Math.min(pause * 2, 20);
            if (pause >= 8) {
                group.killAll(); // the program has exited: whatever is left of the run is a leftover
            }
        }
    }

    private static void teardown(Cgroups.RunGroup group) {
        emptied(group);
        group.destroy();
    }

    /** Waits until nothing is left in {@code group}; false when interrupted (everything in it is then killed). */
    private static boolean emptied(Cgroups.RunGroup group) {
        try {
            awaitEmpty(group);
            return group.pids().isEmpty();
        } catch (InterruptedException e) {
            group.killAll();
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Waits until every slot is free: no run in progress, every finished run's cgroups gone. */
    boolean awaitIdle(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (free.size() < count) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(2);
        }
        return true;
    }

    /** The start of the names of this launcher's run groups ({@code run-<pid>-<instance tag>}). */
    String groupPrefix() {
        return groupPrefix;
    }

    /** How many run and session cgroups of this launcher exist now, not counting those made ahead. */
    int liveRunGroups() {
        Cgroups sessions = sessionCgroups;
        return cgroups.liveGroups(groupPrefix) - prepared.size()
                + (sessions == null ? 0 : sessions.liveGroups(groupPrefix));
    }

    /**
     * Stops making cgroups ahead, waits up to {@code timeout} for the slots to come back (kills nothing), then removes
     * the cgroups made ahead. An interrupt ends the wait and is kept.
     */
    void drain(Duration timeout) {
        try {
            closing = true;
            awaitIdle(timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        prepared.values().forEach(Cgroups.RunGroup::destroy);
        prepared.clear();
        if (sessionCgroups != null) {
            sessionCgroups.removeNested(); // when its sessions' groups are gone; else the next start's sweep
        }
    }

    /** Gives the uid block back to the host; last, after the work root is gone. */
    void releaseUids() {
        if (lease != null) {
            lease.close();
        }
    }
}
