package dev.crucible.sandbox;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * cgroup v1: one group per run in each of the memory, pids, cpu and cpuacct hierarchies, under a {@code crucible}
 * group beneath this process's own group: rlimits are per process or per uid, only a cgroup bounds a whole run (see
 * docs/sandbox-recipe.md, Cgroups).
 */
record CgroupV1(Path memory, Path pids, Path cpu, Path cpuacct) implements Cgroups {

    static CgroupV1 create(Map<String, String> own, List<String> mountinfo) throws IOException {
        Path[] parents = new Path[4];
        String[] controllers = {"memory", "pids", "cpu", "cpuacct"};
        for (int i = 0; i < controllers.length; i++) {
            String path = own.get(controllers[i]);
            Path dir = path == null ? null : Cgroups.groupDirectory(mountinfo, "cgroup", controllers[i], path);
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
            Cgroups.write(dirs.get(2).resolve("cpu.cfs_period_us"), "100000");
            Cgroups.write(dirs.get(2).resolve("cpu.cfs_quota_us"), "100000"); // one CPU
            return new Run(dirs);
        } catch (IOException e) {
            new Run(dirs).destroy();
            throw e;
        }
    }

    @Override
    public int liveGroups(String prefix) {
        return List.of(memory, pids, cpu, cpuacct).stream().mapToInt(p -> Cgroups.countRunGroups(p, prefix))
                .max().orElse(0);
    }

    @Override
    public void removeStale() {
        List.of(memory, pids, cpu, cpuacct).forEach(Cgroups::removeStaleGroups);
    }

    @Override
    public String describe() {
        return "cgroup v1 (memory " + memory + ", pids " + pids + ", cpu " + cpu + ", cpuacct " + cpuacct + ")";
    }

    private record Run(List<Path> dirs) implements RunGroup {
        @Override
        public void limit(Limits limits) throws IOException {
            long bytes = limits.memoryMb() * 1024L * 1024L;
            Path memsw = dirs.get(0).resolve("memory.memsw.limit_in_bytes");
            // a fresh group's memsw limit is unlimited, so the memory limit goes first (memsw >= memory)
            Cgroups.write(dirs.get(0).resolve("memory.limit_in_bytes"), Long.toString(bytes));
            if (Files.exists(memsw)) {
                Cgroups.write(memsw, Long.toString(bytes)); // no swap beyond the limit
            }
            Cgroups.write(dirs.get(1).resolve("pids.max"), Integer.toString(limits.pids()));
        }

        @Override
        public void background(boolean on) throws IOException {
            Cgroups.write(dirs.get(2).resolve("cpu.shares"), on ? "2" : "1024");
        }

        @Override
        public void cpuQuota(double cores) throws IOException {
            Cgroups.write(dirs.get(2).resolve("cpu.cfs_quota_us"), Long.toString(Math.max(1000, (long) (cores * 100_000))));
        }

        @Override
        public List<Path> procsFiles() {
            return dirs.stream().map(d -> d.resolve("cgroup.procs")).toList();
        }

        @Override
        public long cpuNanos() {
            return dirs.size() > 3 ? Cgroups.readLong(dirs.get(3).resolve("cpuacct.usage")) : -1;
        }

        @Override
        public long memoryPeakBytes() {
            return Cgroups.readLong(dirs.get(0).resolve("memory.max_usage_in_bytes"));
        }

        @Override
        public long oomKills() {
            return Math.max(0, Cgroups.readKey(dirs.get(0).resolve("memory.oom_control"), "oom_kill"));
        }

        @Override
        public List<Long> pids() {
            // every process of the run is in all four groups; pids is the one that counts threads too
            return dirs.size() > 1 ? Cgroups.readPids(dirs.get(1).resolve("cgroup.procs")) : List.of();
        }

        @Override
        public boolean holds(long pid) {
            return Cgroups.isMember(pid, dirs.get(0).getFileName().toString());
        }

        @Override
        public void killAll() {
            for (Path dir : dirs) {
                Cgroups.killMembers(dir);
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
