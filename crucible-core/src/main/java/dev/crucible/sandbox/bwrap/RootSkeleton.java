package dev.crucible.sandbox.bwrap;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/**
 * The first state of a session's own root ({@code SandboxRoot.Overlaid}): the top-level directories a program expects,
 * the usr-merge links, an {@code /etc} of its own (the synthetic one's copies, with passwd and group naming {@code root}
 * and {@code user}) and {@code /home/user}. Written once by the server, as host root, into a directory nothing runs in
 * yet; owned by the session's root (its block's first uid), {@code /home/user} by its user; {@code /} is {@code 1777}.
 */
final class RootSkeleton {
    private static final List<String> DIRS = List.of("etc", "home", "opt", "srv", "var", "var/cache", "var/lib",
            "var/log", "var/spool", "mnt", "media", "run", "usr", "tmp", "proc", "dev", "workspace", "build");

    private RootSkeleton() {}

    static void write(Path root, Path syntheticEtc, List<String> hostFiles, long rootUid, int userUid)
            throws IOException {
        Files.createDirectories(root);
        for (String d : DIRS) {
            Files.createDirectories(root.resolve(d));
        }
        for (String link : List.of("bin", "lib", "sbin")) {
            Files.createSymbolicLink(root.resolve(link), Path.of("usr", link));
        }
        if (Files.isDirectory(Path.of("/usr/lib64"))) {
            Files.createSymbolicLink(root.resolve("lib64"), Path.of("usr/lib64"));
        }
        Path etc = root.resolve("etc");
        try (var walk = Files.walk(syntheticEtc)) {
            for (Path from : walk.toList()) {
                Path to = etc.resolve(syntheticEtc.relativize(from).toString());
                if (Files.isSymbolicLink(from)) {
                    Files.createSymbolicLink(to, Files.readSymbolicLink(from));
                } else if (Files.isDirectory(from)) {
                    Files.createDirectories(to);
                } else if (Files.size(from) > 0) { // an empty file is a mount point of another bind
                    Files.copy(from, to);
                }
            }
        }
        for (String host : hostFiles) { // a runtime's read-only binds (/etc/matplotlibrc, a JDK's /etc): copies
            Path from = Path.of(host);
            if (from.isAbsolute() && Files.exists(from, LinkOption.NOFOLLOW_LINKS)) {
                copyTree(from, root.resolve(host.substring(1)));
            }
        }
        Files.writeString(etc.resolve("passwd"), "root:x:0:0:root:/root:/bin/bash\n"
                + "user:x:1000:1000:user:/home/user:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
        Files.writeString(etc.resolve("group"), "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n");
        Path home = Files.createDirectories(root.resolve("home/user"));
        Files.createDirectories(root.resolve("root"));
        Files.setPosixFilePermissions(root.resolve("root"), PosixFilePermissions.fromString("rwx------"));
        Files.setPosixFilePermissions(root.resolve("var/tmp").getParent(), PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.createDirectories(root.resolve("var/tmp"));
        Files.setAttribute(root.resolve("var/tmp"), "unix:mode", 01777);
        try (var walk = Files.walk(root)) {
            for (Path p : walk.toList()) {
                boolean users = p.startsWith(home);
                Files.setAttribute(p, "unix:uid", users ? userUid : (int) rootUid, LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(p, "unix:gid", users ? userUid : (int) rootUid, LinkOption.NOFOLLOW_LINKS);
            }
        }
        // the user may make directories at the top (E2B's templates let it: makeDir('/code')), sticky: nothing there
        // that is not its own can it remove or rename
        Files.setAttribute(root, "unix:mode", 01777);
    }

    /** {@code from} (a file, a link or a whole directory, links copied as links) at {@code to}, replacing it. */
    private static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to.getParent());
        try (var walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isSymbolicLink(p)) {
                    Files.deleteIfExists(target);
                    Files.createSymbolicLink(target, Files.readSymbolicLink(p));
                } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectories(target);
                } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                    Files.copy(p, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    /** An empty directory for the overlay's upper or work layer, the session root's. */
    static void layer(Path dir, long rootUid) throws IOException {
        Files.createDirectories(dir);
        Files.setAttribute(dir, "unix:uid", (int) rootUid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", (int) rootUid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}
