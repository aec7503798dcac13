package dev.crucible.sandbox.cgroup;

import dev.crucible.sandbox.Limits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * cgroup v1: one group per run in each of the memory, pids, cpu and cpuacct hierarchies, under a {@code crucible}
 * group beneath this process's own group: rlimits are per process or per uid, only a cgroup bounds a whole run (see
 * docs/sandbox-recipe.md, Cgroups). Public so that the launcher's tests can look at a slot's groups in its hierarchies.
 */
public record CgroupV1(Path memory, Path pids, Path cpu, Path cpuacct) implements Cgroups {

    static CgroupV1 create(Map<String, String> own, List<String> mountinfo) throws IOException {
        Path[] parents = new Path[4];
        String[] controllers = {"memory", "pids", "cpu", "cpuacct"};
        for (int i = 0; i < controllers.length; i++) {
            String path = own.get(controllers[i]);
            Path dir = path == null ? null : CgroupMounts.groupDirectory(mountinfo, "cgroup", controllers[i], path);
            if (dir == null) {
                throw new IOException("controller " + controllers[i] + " is not mounted");
            }
            parents[i] = dir.resolve("crucible");
            Files.createDirectories(parents[i]);
        }
        return new CgroupV1(parents[0], parents[1], parents[2], parents[3]);
    }

    @Override
    public RunGroup prepare(String name) throws IOException {
        List<Path> dirs = new ArrayList<>();
        try {
            for (Path parent : List.of(memory, pids, cpu, cpuacct)) {
                Path dir = parent.resolve(name);
                Files.createDirectory(dir);
                dirs.add(dir);
            }
            CgroupFiles.write(dirs.get(2).resolve("cpu.cfs_period_us"), "100000");
            CgroupFiles.write(dirs.get(2).resolve("cpu.cfs_quota_us"), "100000"); // one CPU
            return new Run(dirs);
        } catch (IOException e) {
            new Run(dirs).destroy();
            throw e;
        }
    }

    @Override
    public int liveGroups(String prefix) {
        return List.of(memory, pids, cpu, cpuacct).stream().mapToInt(p -> CgroupFiles.countRunGroups(p, prefix))
                .max().orElse(0);
    }

    @Override
    public void removeStale() {
        List.of(memory, pids, cpu, cpuacct).forEach(CgroupFiles::removeStaleGroups);
    }

    @Override
    public String describe() {
        return "cgroup v1 (memory " + memory + ", pids " + pids + ", cpu " + cpu + ", cpuacct " + cpuacct + ")";
    }

    @Override
    public Cgroups nested(String name, long memoryBytes, int cpuWeight) throws IOException {
        CgroupV1 inner = new CgroupV1(memory.resolve(name), pids.resolve(name), cpu.resolve(name), cpuacct.resolve(name));
        for (Path dir : List.of(inner.memory, inner.pids, inner.cpu, inner.cpuacct)) {
            Files.createDirectories(dir);
        }
        Path limit = inner.memory.resolve("memory.limit_in_bytes");
        Path memsw = inner.memory.resolve("memory.memsw.limit_in_bytes");
        String bytes = Long.toString(memoryBytes);
        if (Files.exists(memsw) && CgroupFiles.readLong(limit) < memoryBytes) {
            CgroupFiles.write(memsw, bytes); // raised: memory and swap first, never below the memory limit
        }
        CgroupFiles.write(limit, bytes);
        if (Files.exists(memsw)) {
            CgroupFiles.write(memsw, bytes); // no swap beyond it
        }
        CgroupFiles.write(inner.cpu.resolve("cpu.shares"), Integer.toString(Math.min(262_144, 1024 * Math.max(1,
                cpuWeight))));
        return inner;
    }

    @Override
    public long memoryUsedBytes() {
        return CgroupFiles.readLong(memory.resolve("memory.usage_in_bytes"));
    }

    @Override
    public void removeNested() {
        for (Path dir : List.of(memory, pids, cpu, cpuacct)) {
            try {
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                // a group still in it: the stale sweep of a later start removes it
            }
        }
    }

    /**
     * The groups of one run, used again by the slot's later runs ({@link #reuse}) when the run left little charged: v1
     * lets the memory peak be reset ({@code memory.max_usage_in_bytes}); the OOM-kill counter cannot be, so it is
     * counted from the run's start.
     */
    private static final class Run implements RunGroup {
        /**
         * The most an earlier run may leave charged (page cache of what it read) for its groups to serve the next:
         * the kernel reclaims that charge under the next run's limit, so its reported peak can be short by up to
         * this much. A run that left more (a compile reads tens of MiB) gets new groups after it.
         */
        static final long REUSE_LEFTOVER_BYTES = 1 << 20;

        private final List<Path> dirs;
        /** The limits last written (a later run with the same writes nothing), or null. */
        private volatile Limits written;
        /** {@code oom_kill} when the group was last made ready for a run. */
        private volatile long oomBase;
        /** The charge left in the memory group when it was last made ready (page cache of files a run read). */
        private volatile long usageBase;
        private volatile boolean quotaChanged;
        /** False once a run of these groups ended abnormally ({@link #forgo}). */
        private volatile boolean reusable = true;
        /** Whether the CPU weight is not a normal run's (a waiting pool sandbox's, or a run's share of its token's). */
        private volatile boolean reweighed;

        Run(List<Path> dirs) {
            this.dirs = dirs;
        }

        @Override
        public void limit(Limits limits) throws IOException {
            Limits last = written;
            if (last != null && last.memoryMb() == limits.memoryMb() && last.pids() == limits.pids()) {
                return;
            }
            written = null; // until every write below went through: a group left half-written is not used again
            long bytes = limits.memoryMb() * 1024L * 1024L;
            Path memory = dirs.get(0).resolve("memory.limit_in_bytes");
            Path memsw = dirs.get(0).resolve("memory.memsw.limit_in_bytes");
            // memory.memsw.limit_in_bytes may never be below memory.limit_in_bytes: a raised limit writes memsw
            // first, a lowered one memory first (a fresh group's memsw is unlimited)
            boolean swap = Files.exists(memsw);
            if (swap && last != null && limits.memoryMb() > last.memoryMb()) {
                CgroupFiles.write(memsw, Long.toString(bytes));
            }
            CgroupFiles.write(memory, Long.toString(bytes));
            if (swap) {
                CgroupFiles.write(memsw, Long.toString(bytes)); // no swap beyond the limit
            }
            CgroupFiles.write(dirs.get(1).resolve("pids.max"), Integer.toString(limits.pids()));
            written = limits;
        }

        @Override
        public void weigh(int percent) throws IOException {
            int shares = percent <= CpuShare.BACKGROUND ? 2 : 1024 * Math.min(percent, CpuShare.NORMAL) / CpuShare.NORMAL;
            CgroupFiles.write(dirs.get(2).resolve("cpu.shares"), Integer.toString(shares));
            reweighed = percent != CpuShare.NORMAL;
        }

        @Override
        public void cpuQuota(double cores) throws IOException {
            quotaChanged = true;
            CgroupFiles.write(dirs.get(2).resolve("cpu.cfs_quota_us"), Long.toString(Math.max(1000, (long) (cores * 100_000))));
        }

        @Override
        public void forgo() {
            reusable = false;
        }

        @Override
        public boolean reuse() {
            if (!reusable || written == null) {
                return false; // a run that ended abnormally, or limits not all written: new groups
            }
            try {
                if (CgroupFiles.readLong(dirs.get(1).resolve("pids.current")) != 0) {
                    return false; // a task (a zombie included) is still charged here
                }
                if (quotaChanged) {
                    CgroupFiles.write(dirs.get(2).resolve("cpu.cfs_quota_us"), "100000");
                    quotaChanged = false;
                }
                if (reweighed) {
                    weigh(CpuShare.NORMAL);
                }
                long left = CgroupFiles.readLong(dirs.get(0).resolve("memory.usage_in_bytes"));
                Path memsw = dirs.get(0).resolve("memory.memsw.usage_in_bytes"); // memory and swap together
                long leftWithSwap = Files.exists(memsw) ? CgroupFiles.readLong(memsw) : left;
                if (left < 0 || left > REUSE_LEFTOVER_BYTES || leftWithSwap < 0 || leftWithSwap > REUSE_LEFTOVER_BYTES) {
                    return false; // a run that read much (a compiler's files) would blur the next one's peak
                }
                CgroupFiles.write(dirs.get(0).resolve("memory.max_usage_in_bytes"), "0"); // the peak is the usage now
                long base = CgroupFiles.readLong(dirs.get(0).resolve("memory.usage_in_bytes"));
                long oom = CgroupFiles.readKey(dirs.get(0).resolve("memory.oom_control"), "oom_kill");
                if (base < 0 || oom < 0) {
                    return false; // a baseline not read would count an earlier run's peak or kill as the next one's
                }
                usageBase = base;
                oomBase = oom;
                return true;
            } catch (IOException e) {
                return false;
            }
        }

        @Override
        public List<Path> procsFiles() {
            return dirs.stream().map(d -> d.resolve("cgroup.procs")).toList();
        }

        @Override
        public long cpuNanos() {
            return dirs.size() > 3 ? CgroupFiles.readLong(dirs.get(3).resolve("cpuacct.usage")) : -1;
        }

        @Override
        public long memoryPeakBytes() {
            long peak = CgroupFiles.readLong(dirs.get(0).resolve("memory.max_usage_in_bytes"));
            return peak < 0 ? -1 : Math.max(0, peak - usageBase);
        }

        @Override
        public long oomKills() {
            return Math.max(0, CgroupFiles.readKey(dirs.get(0).resolve("memory.oom_control"), "oom_kill") - oomBase);
        }

        @Override
        public List<Long> pids() {
            // every process of the run is in all four groups; pids is the one that counts threads too
            return dirs.size() > 1 ? CgroupFiles.readPids(dirs.get(1).resolve("cgroup.procs")) : List.of();
        }

        @Override
        public boolean holds(long pid) {
            return CgroupFiles.isMember(pid, dirs.get(0).getFileName().toString());
        }

        @Override
        public void killAll() {
            for (Path dir : dirs) {
                CgroupFiles.killMembers(dir);
            }
        }

        @Override
        public void destroy() {
            for (Path dir : dirs) {
                try {
                    Files.deleteIfExists(dir);
                } catch (IOException e) {
                    // still busy: the caller has waited for the group to empty; a leftover is reported by tests
                }
            }
        }
    }
}
