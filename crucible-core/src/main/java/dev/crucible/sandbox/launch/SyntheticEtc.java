package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandbox's whole {@code /etc}, bound read-only in one mount: synthetic passwd, group and hosts, a copy of the
 * host's ld.so.cache and a mirror of its /etc/alternatives links (which point into /usr). One bind instead of five
 * saves about a millisecond a run. The copies are taken at start-up; nothing of the host's /etc is shown otherwise
 * (see docs/sandbox-recipe.md, Synthetic /etc). Public: written once by the launcher, shared with the zygotes.
 */
public final class SyntheticEtc {
    private final Path dir;
    /** The host paths whose mount points exist in {@link #dir}. */
    private final Set<String> made = ConcurrentHashMap.newKeySet();

    private SyntheticEtc(Path dir) {
        this.dir = dir;
    }

    /** Writes the directory {@code dir} (created) and returns it. */
    public static SyntheticEtc write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("passwd"), "root:x:0:0:root:/root:/bin/false\n"
                + "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n");
        Files.writeString(dir.resolve("group"), "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n");
        Files.writeString(dir.resolve("hosts"), "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n");
        Path cache = Path.of("/etc/ld.so.cache");
        if (Files.isRegularFile(cache)) {
            Files.copy(cache, dir.resolve("ld.so.cache"));
        }
        Path alternatives = Path.of("/etc/alternatives");
        if (Files.isDirectory(alternatives)) {
            Path mirror = Files.createDirectory(dir.resolve("alternatives"));
            try (var links = Files.list(alternatives)) {
                for (Path link : links.filter(Files::isSymbolicLink).toList()) {
                    Files.createSymbolicLink(mirror.resolve(link.getFileName()), Files.readSymbolicLink(link));
                }
            }
        }
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.filter(p -> !Files.isSymbolicLink(p)).toList()) {
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(
                        Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
            }
        }
        return new SyntheticEtc(dir);
    }

    /** The host directory bound at {@code /etc}. */
    public Path dir() {
        return dir;
    }

    /**
     * A bind below /etc needs its mount point in the read-only /etc; creates the empty directory or file once.
     * Concurrent launches of one runtime ask for the same points at once (a fresh engine's first requests): a point
     * is made under a lock and remembered, so that no launch fails on one another launch made a moment before.
     */
    public void addMountPoints(SandboxSpec spec) throws IOException {
        if (!(spec.root() instanceof SandboxRoot.Host)) {
            return;
        }
        for (String path : spec.readOnlyBindsIfPresent()) {
            if (path.startsWith("/etc/") && !made.contains(path)) {
                addMountPoint(path);
            }
        }
    }

    private synchronized void addMountPoint(String path) throws IOException {
        boolean directory = Files.isDirectory(Path.of(path));
        if (!directory && !Files.isRegularFile(Path.of(path))) {
            return; // not on this host (now): not bound, and asked again next time
        }
        Path point = dir.resolve(path.substring("/etc/".length())).normalize();
        if (!point.startsWith(dir)) {
            return;
        }
        if (!Files.exists(point, LinkOption.NOFOLLOW_LINKS)) {
            if (directory) {
                Files.createDirectories(point);
            } else {
                Files.createDirectories(point.getParent());
                Files.createFile(point);
            }
            Files.setPosixFilePermissions(point, PosixFilePermissions.fromString(directory ? "rwxr-xr-x" : "rw-r--r--"));
        }
        made.add(path);
    }
}
