package dev.crucible.sandbox;

import dev.crucible.os.Linux;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Per-run control groups: memory (with the OOM-kill counter), pids, CPU quota and CPU accounting. One interface for
 * cgroup v1 (separate hierarchies per controller) and v2 (one unified tree); {@link #detect} picks what the host
 * offers, or {@link None} with the reason when no group can be written.
 */
sealed interface Cgroups permits CgroupV1, CgroupV2, Cgroups.None {
    int SIGKILL = 9;

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

    /** The groups of one run. Methods never throw for a group that has gone already. */
    interface RunGroup {
        /** Writes the memory and pids limits of the run. */
        void limit(Limits limits) throws IOException;

        /**
         * Lowers (or restores) the group's CPU weight: a warm-pool sandbox starts in the background, yielding the CPU
         * to running requests, and gets the normal weight when a request claims it.
         */
        void background(boolean on) throws IOException;

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
    }

    /**
     * Detects the cgroup version this process lives in and prepares a {@code crucible} parent group under its own
     * group. Never throws: a host where nothing can be written yields {@link None}.
     */
    static Cgroups detect() {
        try {
            Map<String, String> own = ownGroups(Files.readAllLines(Path.of("/proc/self/cgroup")));
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

    /** Maps each controller (and "" for the v2 tree) to this process's group path, from /proc/self/cgroup. */
    static Map<String, String> ownGroups(List<String> procSelfCgroup) {
        Map<String, String> groups = new LinkedHashMap<>();
        for (String line : procSelfCgroup) {
            String[] parts = line.split(":", 3);
            if (parts.length < 3) {
                continue;
            }
            for (String controller : parts[1].split(",")) {
                groups.put(controller, parts[2]);
            }
        }
        return groups;
    }

    /**
     * Finds the mount point of a cgroup hierarchy in /proc/self/mountinfo.
     *
     * @param fsType {@code cgroup} or {@code cgroup2}
     * @param controller the v1 controller that must be among the super options, or null for v2
     * @param groupPath the group path from /proc/self/cgroup, resolved against the mount's root
     * @return the directory of that group, or null when not mounted; of several mounts on the hierarchy's first mount
     *     point, the last (the one visible there: a container engine's read-only bind with a writable bind over it)
     */
    static Path groupDirectory(List<String> mountinfo, String fsType, String controller, String groupPath) {
        Path found = null;
        String foundPoint = null;
        for (String line : mountinfo) {
            String[] halves = line.split(" - ", 2);
            if (halves.length < 2) {
                continue;
            }
            String[] left = halves[0].split(" ");
            String[] right = halves[1].split(" ");
            if (left.length < 5 || right.length < 3 || !right[0].equals(fsType)) {
                continue;
            }
            if (controller != null && !List.of(right[2].split(",")).contains(controller)) {
                continue;
            }
            String root = left[3];
            String mountPoint = left[4];
            if (foundPoint != null && !foundPoint.equals(mountPoint)) {
                continue;
            }
            String relative = groupPath;
            if (!root.equals("/") && relative.startsWith(root)) {
                relative = relative.substring(root.length());
            }
            foundPoint = mountPoint;
            found = Path.of(mountPoint, relative.isEmpty() ? "/" : relative).normalize();
        }
        return found;
    }

    static void write(Path file, String value) throws IOException {
        Files.writeString(file, value);
    }

    static long readLong(Path file) {
        try {
            String text = Files.readString(file).trim();
            return text.isEmpty() || text.equals("max") ? -1 : Long.parseLong(text.split("\\s+")[0]);
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** Reads {@code key value} lines (memory.events, cpu.stat, memory.oom_control) and returns the value of key. */
    static long readKey(Path file, String key) {
        try {
            for (String line : Files.readAllLines(file)) {
                String[] kv = line.trim().split("\\s+");
                if (kv.length == 2 && kv[0].equals(key)) {
                    return Long.parseLong(kv[1]);
                }
            }
        } catch (IOException | NumberFormatException e) {
            // a group that has gone reads as nothing
        }
        return -1;
    }

    static List<Long> readPids(Path procs) {
        try {
            return Files.readAllLines(procs).stream().filter(s -> !s.isBlank()).map(s -> Long.parseLong(s.trim())).toList();
        } catch (IOException | NumberFormatException e) {
            return List.of();
        }
    }

    static int countRunGroups(Path parent, String prefix) {
        try (var children = Files.list(parent)) {
            return (int) children.filter(p -> p.getFileName().toString().startsWith(prefix)).count();
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * Group names are {@code run-<pid of the Crucible process>-<random>}; see {@link #removeStale()}. A group whose
     * Crucible process is gone is removed, after killing what is still in it: a server killed while bubblewrap was
     * setting a sandbox up leaves bubblewrap's init blocked forever (it waits on an eventfd for its dead parent, and
     * its parent-death signal is not armed yet).
     */
    static void removeStaleGroups(Path parent) {
        try (var children = Files.list(parent)) {
            for (Path group : children.toList()) {
                String[] parts = group.getFileName().toString().split("-");
                if (parts.length == 3 && parts[0].equals("run") && parts[1].matches("\\d{1,10}")
                        && ProcessHandle.of(Long.parseLong(parts[1])).isEmpty()) {
                    Path procs = group.resolve("cgroup.procs");
                    for (int i = 0; i < 50 && !readPids(procs).isEmpty(); i++) {
                        killMembers(group);
                        Thread.sleep(10);
                    }
                    if (readPids(procs).isEmpty()) {
                        Files.deleteIfExists(group);
                    }
                }
            }
        } catch (IOException e) {
            // best effort: a group still in use stays
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * SIGKILLs each of {@code pids} that is, once pinned by a pidfd, still a member of the cgroup directory named
     * {@code group}: a pid read from {@code cgroup.procs} that was reused by a process outside meanwhile is left
     * alone.
     */
    static void killMembers(List<Long> pids, String group) {
        for (long pid : pids) {
            Linux.signalIf(pid, SIGKILL, p -> isMember(p, group));
        }
    }

    static void killMembers(Path dir) {
        killMembers(readPids(dir.resolve("cgroup.procs")), dir.getFileName().toString());
    }

    /** Whether {@code /proc/<pid>/cgroup} puts the process in a group directory named {@code group}. */
    static boolean isMember(long pid, String group) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "cgroup"))) {
                String path = line.substring(line.indexOf(':', line.indexOf(':') + 1) + 1);
                if (path.endsWith("/" + group) || path.contains("/" + group + "/")) {
                    return true;
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone
        }
        return false;
    }
}
