package dev.crucible.session.store;

import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.session.workspace.WorkspaceDisk;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Where a session's own root lives in its directory (issue 27): the root and its layers' upper and work directories
 * under {@code disk/r/} (on the session's disk, inside its quota), the launcher's mount points under {@code mnt/}.
 */
final class OwnRoot {
    private OwnRoot() {}

    /** The own root of the session in {@code sessionDir}, or null when it was made without one. */
    static SandboxRoot.Overlaid of(Path sessionDir) {
        if (!WorkspaceDisk.rooted(sessionDir)) {
            return null;
        }
        Path r = sessionDir.resolve(WorkspaceDisk.DISK).resolve("r");
        return new SandboxRoot.Overlaid(r.resolve("root"), SandboxRoot.Layer.hostDirs().stream().map(at -> layer(r, at)).toList(),
                sessionDir.resolve("mnt"));
    }

    /** {@code r/usr-upper}, {@code r/dpkg-upper}…: the last part of its place names a layer on the disk. */
    private static SandboxRoot.Layer layer(Path r, String at) {
        String name = at.substring(at.lastIndexOf('/') + 1);
        return new SandboxRoot.Layer(at, r.resolve(name + "-upper"), r.resolve(name + "-work"));
    }

    /** Removes the launcher's (empty, unmounted) mount points and their directory, when there are any. */
    static void removeMountPoints(Path sessionDir) throws IOException {
        Path mounts = sessionDir.resolve("mnt");
        if (Files.isDirectory(mounts, LinkOption.NOFOLLOW_LINKS)) {
            try (var points = Files.list(mounts)) {
                for (Path point : points.toList()) {
                    Files.deleteIfExists(point);
                }
            }
        }
    }
}
