package dev.crucible.sandbox.cgroup;

import dev.crucible.sandbox.Limits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * cgroup v2: one group per run under {@code <own group>/crucible}. Because v2 forbids processes in a group whose
 * controllers are delegated to children, this process first moves itself into a {@code <own>/server} leaf, then
 * enables memory, pids and cpu for the subtree. Needs a delegated subtree (root, or systemd {@code Delegate=yes}).
 */
record CgroupV2(Path parent) implements Cgroups {
    private static final String CONTROLLERS = "+memory +pids +cpu";

    static CgroupV2 create(String ownPath, List<String> mountinfo) throws IOException {
        Path own = CgroupMounts.groupDirectory(mountinfo, "cgroup2", null, ownPath);
        if (own == null) {
            throw new IOException("cgroup2 is not mounted");
        }
        String available = Files.readString(own.resolve("cgroup.controllers"));
        for (String c : List.of("memory", "pids", "cpu")) {
            if (!List.of(available.trim().split("\\s+")).contains(c)) {
                throw new IOException("controller " + c + " is not available in " + own + " (bound to v1?)");
            }
        }
        return prepare(own);
    }

    /** Makes {@code own} a delegating group: this process in a leaf, controllers on for the subtree. */
    static CgroupV2 prepare(Path own) throws IOException {
        Path parent = own.resolve("crucible");
        if (!Files.exists(parent)) {
            List<Long> members = CgroupFiles.readPids(own.resolve("cgroup.procs"));
            if (!members.isEmpty()) {
                Path leaf = own.resolve("server");
                Files.createDirectories(leaf);
                for (long pid : members) {
                    CgroupFiles.write(leaf.resolve("cgroup.procs"), Long.toString(pid));
                }
            }
            CgroupFiles.write(own.resolve("cgroup.subtree_control"), CONTROLLERS);
            Files.createDirectories(parent);
        }
        CgroupFiles.write(parent.resolve("cgroup.subtree_control"), CONTROLLERS);
        return new CgroupV2(parent);
    }

    @Override
    public RunGroup prepare(String name) throws IOException {
        Path dir = parent.resolve(name);
        Files.createDirectory(dir);
        Run run = new Run(dir);
        try {
            CgroupFiles.write(dir.resolve("cpu.max"), "100000 100000"); // one CPU
            return run;
        } catch (IOException e) {
            run.destroy();
            throw e;
        }
    }

    @Override
    public int liveGroups(String prefix) {
        return CgroupFiles.countRunGroups(parent, prefix);
    }

    @Override
    public void removeStale() {
        CgroupFiles.removeStaleGroups(parent);
    }

    @Override
    public String describe() {
        return "cgroup v2 (" + parent + ")";
    }

    @Override
    public Cgroups nested(String name, long memoryBytes, int cpuWeight) throws IOException {
        Path dir = parent.resolve(name);
        Files.createDirectories(dir);
        CgroupFiles.write(dir.resolve("cgroup.subtree_control"), CONTROLLERS);
        CgroupFiles.write(dir.resolve("memory.max"), Long.toString(memoryBytes));
        Path swap = dir.resolve("memory.swap.max");
        if (Files.exists(swap)) {
            CgroupFiles.write(swap, "0");
        }
        CgroupFiles.write(dir.resolve("cpu.weight"), Integer.toString(Math.min(10_000, 100 * Math.max(1, cpuWeight))));
        return new CgroupV2(dir);
    }

    @Override
    public long memoryUsedBytes() {
        return CgroupFiles.readLong(parent.resolve("memory.current"));
    }

    @Override
    public void removeNested() {
        try {
            Files.deleteIfExists(parent);
        } catch (IOException e) {
            // a group still in it: the stale sweep of a later start removes it
        }
    }

    record Run(Path dir) implements RunGroup {
        @Override
        public void limit(Limits limits) throws IOException {
            CgroupFiles.write(dir.resolve("memory.max"), Long.toString(limits.memoryMb() * 1024L * 1024L));
            Path swap = dir.resolve("memory.swap.max");
            if (Files.exists(swap)) {
                CgroupFiles.write(swap, "0");
            }
            CgroupFiles.write(dir.resolve("pids.max"), Integer.toString(limits.pids()));
        }

        @Override
        public void weigh(int percent) throws IOException {
            CgroupFiles.write(dir.resolve("cpu.weight"), Integer.toString(Math.clamp(percent, CpuShare.BACKGROUND,
                    CpuShare.NORMAL)));
        }

        @Override
        public void cpuQuota(double cores) throws IOException {
            CgroupFiles.write(dir.resolve("cpu.max"), Math.max(1000, (long) (cores * 100_000)) + " 100000");
        }

        @Override
        public List<Path> procsFiles() {
            return List.of(dir.resolve("cgroup.procs"));
        }

        @Override
        public long cpuNanos() {
            long usec = CgroupFiles.readKey(dir.resolve("cpu.stat"), "usage_usec");
            return usec < 0 ? -1 : usec * 1000;
        }

        @Override
        public long memoryPeakBytes() {
            return CgroupFiles.readLong(dir.resolve("memory.peak"));
        }

        @Override
        public long oomKills() {
            return Math.max(0, CgroupFiles.readKey(dir.resolve("memory.events"), "oom_kill"));
        }

        @Override
        public List<Long> pids() {
            return CgroupFiles.readPids(dir.resolve("cgroup.procs"));
        }

        @Override
        public boolean holds(long pid) {
            return CgroupFiles.isMember(pid, dir.getFileName().toString());
        }

        @Override
        public void killAll() {
            Path kill = dir.resolve("cgroup.kill");
            try {
                CgroupFiles.write(kill, "1");
            } catch (IOException e) {
                CgroupFiles.killMembers(dir); // kernels before 5.14 have no cgroup.kill
            }
        }

        @Override
        public void destroy() {
            try {
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                // still busy; see CgroupV1
            }
        }
    }
}
