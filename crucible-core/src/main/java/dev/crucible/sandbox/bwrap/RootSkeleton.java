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
            "var/log", "var/spool", "mnt", "media", "run", "usr", "tmp", "proc", "dev", "workspace", "build",
            "var/lib/dpkg", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/log/apt",
            "var/cache/debconf");

    /**
     * The host's configuration that apt, dpkg, debconf, ldconfig and TLS clients read, copied into a new session's
     * {@code /etc} (about 1 MB, mostly links): only what any host user may read, never apt's {@code auth.conf.d}.
     */
    private static final List<String> PACKAGING = List.of("/etc/apt", "/etc/dpkg", "/etc/debconf.conf",
            "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl/certs", "/etc/ca-certificates.conf");

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
                Path to = etc.resolve(syntheticEtc.relativize(from)); // by bytes: a name need not decode
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
                copyTree(from, root.resolve(host.substring(1)), false);
            }
        }
        for (String host : PACKAGING) {
            Path from = Path.of(host);
            if (Files.exists(from, LinkOption.NOFOLLOW_LINKS) && !Files.exists(root.resolve(host.substring(1)),
                    LinkOption.NOFOLLOW_LINKS)) {
                copyTree(from, root.resolve(host.substring(1)), true);
            }
        }
        accounts(etc);
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

    /**
     * The session's {@code passwd}, {@code group}, {@code shadow} and {@code gshadow}: {@code root}, {@code user}
     * (1000), and the host's system accounts (below 1000, and 65534), whose names the host's packages refer to (dpkg's
     * {@code statoverride}, {@code _apt}, {@code ssl-cert}); no host user's, no password (every one is {@code *}).
     */
    private static void accounts(Path etc) throws IOException {
        StringBuilder passwd = new StringBuilder("root:x:0:0:root:/root:/bin/bash\n");
        StringBuilder group = new StringBuilder("root:x:0:\n");
        StringBuilder shadow = new StringBuilder("root:*:20000:0:99999:7:::\n");
        StringBuilder gshadow = new StringBuilder("root:*::\n");
        for (String[] a : systemEntries(Path.of("/etc/passwd"), 7)) {
            passwd.append(String.join(":", a)).append('\n');
            shadow.append(a[0]).append(":*:20000:0:99999:7:::\n");
        }
        passwd.append("user:x:1000:1000:user:/home/user:/bin/bash\n");
        shadow.append("user:*:20000:0:99999:7:::\n");
        for (String[] g : systemEntries(Path.of("/etc/group"), 4)) {
            group.append(g[0]).append(":x:").append(g[2]).append(":\n"); // members left out: host users
            gshadow.append(g[0]).append(":*::\n");
        }
        group.append("user:x:1000:\n");
        gshadow.append("user:*::\n");
        if (!passwd.toString().contains("\nnobody:")) {
            passwd.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
            shadow.append("nobody:*:20000:0:99999:7:::\n");
        }
        if (!group.toString().contains("\nnogroup:")) {
            group.append("nogroup:x:65534:\n");
            gshadow.append("nogroup:*::\n");
        }
        Files.writeString(etc.resolve("passwd"), passwd);
        Files.writeString(etc.resolve("group"), group);
        for (var secret : java.util.Map.of("shadow", shadow, "gshadow", gshadow).entrySet()) {
            Files.writeString(etc.resolve(secret.getKey()), secret.getValue());
            Files.setPosixFilePermissions(etc.resolve(secret.getKey()), PosixFilePermissions.fromString("rw-r-----"));
        }
    }

    /** The host's entries of {@code file} ({@code fields} long) with an id below 1000 or 65534, but root and user. */
    private static List<String[]> systemEntries(Path file, int fields) throws IOException {
        if (!Files.isRegularFile(file)) {
            return List.of();
        }
        List<String[]> kept = new java.util.ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            String[] f = line.split(":", -1);
            if (f.length != fields || f[0].isEmpty() || f[0].equals("root") || f[0].equals("user")) {
                continue;
            }
            try {
                long id = Long.parseLong(f[2]);
                if (id > 0 && id < 1000 || id == 65534) {
                    kept.add(f);
                }
            } catch (NumberFormatException e) {
                // not an entry
            }
        }
        return kept;
    }

    /**
     * {@code from} (a file, a link or a whole directory, links copied as links) at {@code to}, replacing it;
     * {@code publicOnly}: without what not every host user may read (a file or directory without the other's read bit,
     * a directory without its search bit, apt's {@code auth.conf.d}), and nothing under what is left out.
     */
    static void copyTree(Path from, Path to, boolean publicOnly) throws IOException {
        Files.createDirectories(to.getParent());
        try (var walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                if (publicOnly && !readableByAll(from, p)) {
                    continue;
                }
                Path target = to.resolve(from.relativize(p)); // by bytes: a name need not decode (LANG=C)
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

    /** Whether {@code p} and every directory between {@code top} and it are for any host user to read. */
    private static boolean readableByAll(Path top, Path p) throws IOException {
        for (Path q = p; q != null && q.startsWith(top); q = q.getParent()) {
            if (named(q, "auth.conf")) {
                return false;
            }
            if (Files.isSymbolicLink(q)) {
                continue;
            }
            int mode = (Integer) Files.getAttribute(q, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            boolean dir = Files.isDirectory(q, LinkOption.NOFOLLOW_LINKS);
            if ((mode & 04) == 0 || dir && (mode & 01) == 0) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code p}'s last name starts with {@code prefix}; false for a name this JVM's charset cannot decode. */
    private static boolean named(Path p, String prefix) {
        try {
            return p.getFileName().toString().startsWith(prefix);
        } catch (IllegalArgumentException e) { // InvalidPathException: not ASCII, so not the prefix
            return false;
        }
    }

    /** An empty directory for an overlay's upper or work layer, the session root's: made when missing. */
    static void layer(Path dir, long rootUid) throws IOException {
        if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.createDirectory(dir);
        Files.setAttribute(dir, "unix:uid", (int) rootUid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", (int) rootUid, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** One of the launcher's mount points (host root's, {@code 0755}): made when missing. */
    static void mountPoint(Path dir) throws IOException {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectory(dir);
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }
}
