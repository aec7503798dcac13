package dev.crucible.sandbox.cgroup;

import dev.crucible.sandbox.Limits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Per-run control groups: memory (with the OOM-kill counter), pids, CPU quota and CPU accounting. One interface for
 * cgroup v1 (separate hierarchies per controller) and v2 (one unified tree); {@link #detect} picks what the host
 * offers, or {@link None} with the reason when no group can be written.
 */
public sealed interface Cgroups permits CgroupV1, CgroupV2, Cgroups.None {

    /**
     * Creates the (empty) groups of one future run, with the one-CPU quota set; {@link RunGroup#limit} sets the rest
     * when the run starts. Creating ahead of time keeps the mkdirs off the run's path.
     */
    RunGroup prepare(String name) throws IOException;

    /** Creates the groups of one run with the limits written; the run joins them through {@link RunGroup#procsFiles}. */
    default RunGroup create(String name, Limits limits) throws IOException {
        RunGroup group = prepare(name);
        try {
            group.limit(limits);
            return group;
        } catch (IOException e) {
            group.destroy();
            throw e;
        }
    }

    /** How many groups named {@code prefix…} exist under the parent now, the largest count over the hierarchies. */
    int liveGroups(String prefix);

    /** Removes the empty run groups left by Crucible processes that no longer exist (after a kill -9). */
    void removeStale();

    /** One line for logs and {@code crucible doctor}: which cgroup version and where. */
    String describe();

    /**
     * A group named {@code name} under this one's parent, in which the groups it {@link #prepare}s nest: their memory
     * together is held to {@code memoryBytes} (each keeps its own limit), so that when they overcommit the kernel
     * reclaims and OOM-kills inside it and never outside; their CPU together weighs {@code cpuWeight} runs' worth.
     * Made when missing, its limit written each time.
     */
    Cgroups nested(String name, long memoryBytes, int cpuWeight) throws IOException;

    /** The memory charged to this group's parent now (all of its groups together), in bytes; -1 when unknown. */
    long memoryUsedBytes();

    /** Removes a group made by {@link #nested} once it is empty (its groups destroyed); never throws. */
    void removeNested();

    /** The groups of one run. Methods never throw for a group that has gone already. */
    interface RunGroup {
        /** Writes the memory and pids limits of the run. */
        void limit(Limits limits) throws IOException;

        /**
         * Sets the group's CPU weight in percent of a normal run's ({@link CpuShare}): a warm-pool sandbox starts at
         * {@link CpuShare#BACKGROUND}, yielding the CPU to running requests, and gets its run's share when a request
         * claims it.
         */
        void weigh(int percent) throws IOException;

        /** Sets the CPU quota in cores (1.0 = one CPU's time per period); a run starts with one. */
        void cpuQuota(double cores) throws IOException;

        /** The {@code cgroup.procs} files the launcher writes its pid into before exec. */
        List<Path> procsFiles();

        /** CPU time of the whole run so far, in nanoseconds. */
        long cpuNanos();

        /** Peak memory of the run, in bytes. */
        long memoryPeakBytes();

        /** How many processes of the run the memory cgroup's OOM killer killed. */
        long oomKills();

        /** The pids still in the group. */
        List<Long> pids();

        /** Whether the process {@code pid} is in the group now (after a pidfd pinned it, for a signal). */
        boolean holds(long pid);

        /** SIGKILLs every process in the group. */
        void killAll();

        /** Removes the groups; the group must be empty. */
        void destroy();

        /**
         * Makes the emptied groups ready for the slot's next run, so that they need not be removed and made again
         * (a run's mkdirs and rmdirs are kernel work on every controller): from here on its measures (peak memory,
         * OOM kills) count that run only, and its CPU quota is one CPU again. False where this host cannot (the caller
         * then removes them and makes new ones). The group must be empty.
         */
        default boolean reuse() {
            return false;
        }

        /**
         * The run of these groups ended abnormally (its supervision was interrupted and may still write to them): they
         * are not used again.
         */
        default void forgo() {
        }
    }

    /** No writable cgroup: limits fall back to rlimits. */
    record None(String reason) implements Cgroups {
        @Override
        public RunGroup prepare(String name) {
            throw new UnsupportedOperationException("no cgroups: " + reason);
        }

        @Override
        public int liveGroups(String prefix) {
            return 0;
        }

        @Override
        public void removeStale() {
            // nothing to remove
        }

        @Override
        public String describe() {
            return "none (" + reason + ")";
        }

        @Override
        public Cgroups nested(String name, long memoryBytes, int cpuWeight) {
            return this;
        }

        @Override
        public long memoryUsedBytes() {
            return -1;
        }

        @Override
        public void removeNested() {
            // nothing was made
        }
    }

    /**
     * Detects the cgroup version this process lives in and prepares a {@code crucible} parent group under its own
     * group. Never throws: a host where nothing can be written yields {@link None}.
     */
    static Cgroups detect() {
        try {
            Map<String, String> own = CgroupMounts.ownGroups(Files.readAllLines(Path.of("/proc/self/cgroup")));
            List<String> mountinfo = Files.readAllLines(Path.of("/proc/self/mountinfo"));
            String reasonV1 = null;
            if (own.containsKey("memory") && own.containsKey("pids")) {
                try {
                    return CgroupV1.create(own, mountinfo);
                } catch (IOException | RuntimeException e) {
                    reasonV1 = "cgroup v1: " + e.getMessage();
                }
            }
            if (own.containsKey("")) {
                try {
                    return CgroupV2.create(own.get(""), mountinfo);
                } catch (IOException | RuntimeException e) {
                    return new None((reasonV1 == null ? "" : reasonV1 + "; ") + "cgroup v2: " + e.getMessage());
                }
            }
            return new None(reasonV1 == null ? "no cgroup hierarchy found" : reasonV1);
        } catch (IOException e) {
            return new None("cannot read /proc/self/cgroup: " + e.getMessage());
        }
    }
}
