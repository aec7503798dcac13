package dev.crucible.sandbox.cgroup;

import dev.crucible.os.Processes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The files of a group directory as both cgroup versions share them: limits written, counters and members read (a
 * group that has gone reads as nothing), groups counted and swept, and members killed through pidfds (see
 * docs/sandbox-recipe.md, Teardown).
 */
final class CgroupFiles {
    private static final int SIGKILL = 9;

    private CgroupFiles() {}

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
     * Group names are {@code run-<pid of the Crucible process>-<random>}; see {@link Cgroups#removeStale()}. A group whose
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
                    removeTree(group);
                }
            }
        } catch (IOException e) {
            // best effort: a group still in use stays
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Empties and removes a stale group and the groups nested in it (a sessions' parent's), deepest first. */
    private static void removeTree(Path group) throws InterruptedException {
        try (var children = Files.list(group)) {
            for (Path child : children.filter(Files::isDirectory).toList()) {
                removeTree(child);
            }
        } catch (IOException e) {
            return; // gone meanwhile
        }
        Path procs = group.resolve("cgroup.procs");
        for (int i = 0; i < 50 && !readPids(procs).isEmpty(); i++) {
            killMembers(group);
            Thread.sleep(10);
        }
        try {
            if (readPids(procs).isEmpty()) {
                Files.deleteIfExists(group);
            }
        } catch (IOException e) {
            // still in use: stays
        }
    }

    /**
     * SIGKILLs each of {@code pids} that is, once pinned by a pidfd, still a member of the cgroup directory named
     * {@code group}: a pid read from {@code cgroup.procs} that was reused by a process outside meanwhile is left
     * alone.
     */
    static void killMembers(List<Long> pids, String group) {
        for (long pid : pids) {
            Processes.signalIf(pid, SIGKILL, p -> isMember(p, group));
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
