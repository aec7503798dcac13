package dev.crucible.sandbox.cgroup;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where this process's cgroups are: its group per controller ({@code /proc/self/cgroup}) and the directory of a
 * hierarchy's group ({@code /proc/self/mountinfo}), as text in, paths out (no file is touched).
 */
final class CgroupMounts {
    private CgroupMounts() {}

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
}
