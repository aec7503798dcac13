package dev.crucible.sandbox.cgroup;

import dev.crucible.sandbox.SandboxHost;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Turns on the kernel's {@code favordynmods} cgroup mount option (Linux 6.0+) when we are root.
 *
 * <p>Every run moves its launcher into four (v1) or one (v2) fresh cgroups. Each move takes the global
 * {@code cgroup_threadgroup_rwsem} for writing, which by default waits for an RCU grace period: measured here, four
 * v1 moves cost ~13 ms a run, more than the whole bubblewrap set-up. {@code favordynmods} keeps that semaphore in
 * its writer-friendly mode (moves become ~free; forks and exits pay a few atomic operations instead). The option is
 * host-wide and lasts until the next mount or reboot; {@code CRUCIBLE_CGROUP_FAVORDYNMODS=0} leaves the host alone.
 */
public final class CgroupTuning {
    private CgroupTuning() {}

    /** Applies the option once and says what happened, in one line for {@link SandboxHost#describe()}. */
    public static String favorDynamicModifications(boolean root, boolean allowed) {
        if (!allowed) {
            return "favordynmods: left alone (CRUCIBLE_CGROUP_FAVORDYNMODS=0)";
        }
        List<String> mounts;
        try {
            mounts = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                    .filter(l -> l.contains(" - cgroup2 ") || l.contains(" - cgroup ")).toList();
        } catch (IOException e) {
            return "favordynmods: cannot read mountinfo";
        }
        if (mounts.stream().anyMatch(l -> l.contains("favordynmods"))) {
            return "favordynmods: on";
        }
        if (!root) {
            return "favordynmods: off (needs root; cgroup moves cost an RCU grace period each)";
        }
        Path mount = Path.of("/usr/bin/mount");
        if (!Files.isExecutable(mount)) {
            return "favordynmods: off (no /usr/bin/mount)";
        }
        // cgroup2 first: the semaphore is global, so one hierarchy is enough
        List<String> ordered = mounts.stream().sorted((a, b) -> Boolean.compare(!a.contains(" - cgroup2 "),
                !b.contains(" - cgroup2 "))).toList();
        for (String line : ordered) {
            String mountPoint = line.split(" ")[4];
            if (remount(mount, mountPoint)) {
                return "favordynmods: turned on (remounted " + mountPoint + ")";
            }
        }
        return "favordynmods: off (the kernel refused the mount option)";
    }

    private static boolean remount(Path mount, String mountPoint) {
        try {
            ProcessBuilder pb = new ProcessBuilder(mount.toString(), "-o", "remount,favordynmods", mountPoint)
                    .redirectErrorStream(true);
            pb.environment().clear();
            Process p = pb.start();
            p.getInputStream().readAllBytes();
            return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
