package dev.crucible.sandbox.bwrap;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
            "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl/certs", "/etc/ca-certificates.conf",
            // what a desktop's programs read (docs/desktop.md): XDG autostart and XFCE's defaults, fontconfig, GTK's
            // settings, X resources (xterm's); about 300 KB where the desktop packages are installed
            "/etc/xdg", "/etc/fonts", "/etc/gtk-3.0", "/etc/X11/app-defaults");

    private RootSkeleton() {}

    static void write(Path root, Path syntheticEtc, List<String> hostFiles, long rootUid, int userUid)
            throws IOException {
        List<Path> made = new ArrayList<>();
        made.add(Files.createDirectories(root));
        for (String d : DIRS) { // each with the directories above it that it made
            for (Path q = Files.createDirectories(root.resolve(d)); !q.equals(root); q = q.getParent()) {
                made.add(q);
            }
        }
        for (String link : List.of("bin", "lib", "sbin")) {
            made.add(Files.createSymbolicLink(root.resolve(link), Path.of("usr", link)));
        }
        if (Files.isDirectory(Path.of("/usr/lib64"))) {
            made.add(Files.createSymbolicLink(root.resolve("lib64"), Path.of("usr/lib64")));
        }
        for (Entry e : template(syntheticEtc, hostFiles)) {
            made.add(e.writeUnder(root));
        }
        Path home = Files.createDirectories(root.resolve("home/user"));
        made.add(home);
        made.add(Files.createDirectories(root.resolve("root")));
        Files.setPosixFilePermissions(root.resolve("root"), PosixFilePermissions.fromString("rwx------"));
        Files.setPosixFilePermissions(root.resolve("var/tmp").getParent(), PosixFilePermissions.fromString("rwxr-xr-x"));
        made.add(Files.createDirectories(root.resolve("var/tmp")));
        Files.setAttribute(root.resolve("var/tmp"), "unix:mode", 01777);
        for (Path p : made) { // what was made, not a walk of it: a name is kept by its bytes
            int uid = p.startsWith(home) ? userUid : (int) rootUid;
            Files.setAttribute(p, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(p, "unix:gid", uid, LinkOption.NOFOLLOW_LINKS);
        }
        // the user may make directories at the top (E2B's templates let it: makeDir('/code')), sticky: nothing there
        // that is not its own can it remove or rename
        Files.setAttribute(root, "unix:mode", 01777);
    }

    /** One thing a skeleton copies from the host, at its path under the root: a directory, a link or a file. */
    private record Entry(Path at, Path link, byte[] bytes, Set<PosixFilePermission> mode) {
        static Entry directory(Path at) {
            return new Entry(at, null, null, null);
        }

        /** Writes it under {@code root}, where nothing but a directory is at its path yet; where it was written. */
        Path writeUnder(Path root) throws IOException {
            Path target = root.resolve(at);
            if (link != null) {
                return Files.createSymbolicLink(target, link);
            }
            if (bytes == null) {
                return Files.createDirectories(target);
            }
            Files.write(target, bytes, StandardOpenOption.CREATE_NEW);
            return Files.setPosixFilePermissions(target, mode);
        }
    }

    /** What the host gave skeletons, read once a minute at most: the sessions made together read it once. */
    private record Template(long readAtNanos, List<Entry> entries) {}

    private static final long TEMPLATE_LIFE_NANOS = 60_000_000_000L;
    private static final Map<List<Object>, Template> TEMPLATES = new ConcurrentHashMap<>();

    /**
     * What of {@code syntheticEtc}, the runtime's read-only host files and the host's packaging configuration a new
     * skeleton copies, in the order written (a later entry at the same path replaces an earlier one), and its
     * accounts.
     */
    private static List<Entry> template(Path syntheticEtc, List<String> hostFiles) throws IOException {
        List<Object> key = List.of(syntheticEtc, hostFiles);
        Template t = TEMPLATES.get(key);
        long now = System.nanoTime();
        if (t != null && now - t.readAtNanos() < TEMPLATE_LIFE_NANOS) {
            return t.entries();
        }
        Map<Path, Entry> entries = new LinkedHashMap<>();
        Path etc = Path.of("etc");
        try (var walk = Files.walk(syntheticEtc)) {
            for (Path from : walk.toList()) {
                Path to = etc.resolve(syntheticEtc.relativize(from)); // by bytes: a name need not decode
                if (Files.isSymbolicLink(from)) {
                    entries.put(to, new Entry(to, Files.readSymbolicLink(from), null, null));
                } else if (Files.isDirectory(from)) {
                    entries.put(to, Entry.directory(to));
                } else if (Files.size(from) > 0) { // an empty file is a mount point of another bind
                    entries.put(to, read(from, to));
                }
            }
        }
        for (String host : hostFiles) { // a runtime's read-only binds (/etc/matplotlibrc, a JDK's /etc): copies
            Path from = Path.of(host);
            if (from.isAbsolute() && Files.exists(from, LinkOption.NOFOLLOW_LINKS)) {
                read(from, Path.of(host.substring(1)), false, entries);
            }
        }
        for (String host : PACKAGING) {
            Path from = Path.of(host);
            if (Files.exists(from, LinkOption.NOFOLLOW_LINKS) && !entries.containsKey(Path.of(host.substring(1)))) {
                read(from, Path.of(host.substring(1)), true, entries);
            }
        }
        accounts(etc, entries);
        List<Entry> read = List.copyOf(entries.values());
        TEMPLATES.put(key, new Template(now, read));
        return read;
    }

    private static Entry read(Path from, Path at) throws IOException {
        return new Entry(at, null, Files.readAllBytes(from), Files.getPosixFilePermissions(from,
                LinkOption.NOFOLLOW_LINKS));
    }

    /**
     * The session's {@code passwd}, {@code group}, {@code shadow} and {@code gshadow}: {@code root}, {@code user}
     * (1000), and the host's system accounts (below 1000, and 65534), whose names the host's packages refer to (dpkg's
     * {@code statoverride}, {@code _apt}, {@code ssl-cert}); no host user's, no password (every one is {@code *}).
     */
    private static void accounts(Path etc, Map<Path, Entry> entries) throws IOException {
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
        Set<PosixFilePermission> open = PosixFilePermissions.fromString("rw-r--r--");
        Set<PosixFilePermission> secret = PosixFilePermissions.fromString("rw-r-----");
        for (var file : Map.of("passwd", passwd, "group", group, "shadow", shadow, "gshadow", gshadow).entrySet()) {
            Path at = etc.resolve(file.getKey());
            entries.put(at, new Entry(at, null, file.getValue().toString().getBytes(StandardCharsets.UTF_8),
                    file.getKey().endsWith("shadow") ? secret : open));
        }
    }

    /** The host's entries of {@code file} ({@code fields} long) with an id below 1000 or 65534, but root and user. */
    private static List<String[]> systemEntries(Path file, int fields) throws IOException {
        if (!Files.isRegularFile(file)) {
            return List.of();
        }
        List<String[]> kept = new ArrayList<>();
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
        Map<Path, Entry> entries = new LinkedHashMap<>();
        read(from, to.getFileName(), publicOnly, entries);
        Files.createDirectories(to.getParent());
        for (Entry e : entries.values()) {
            e.writeUnder(to.getParent());
        }
    }

    /** As {@link #copyTree}, into {@code entries} at {@code at} (a path under the root) instead of onto the disk. */
    private static void read(Path from, Path at, boolean publicOnly, Map<Path, Entry> entries) throws IOException {
        List<Path> above = new ArrayList<>();
        for (Path q = at.getParent(); q != null; q = q.getParent()) {
            above.addFirst(q);
        }
        above.forEach(q -> entries.putIfAbsent(q, Entry.directory(q)));
        try (var walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                if (publicOnly && !readableByAll(from, p)) {
                    continue;
                }
                Path target = at.resolve(from.relativize(p)); // by bytes: a name need not decode (LANG=C)
                if (Files.isSymbolicLink(p)) {
                    entries.put(target, new Entry(target, Files.readSymbolicLink(p), null, null));
                } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    entries.putIfAbsent(target, Entry.directory(target));
                } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                    entries.put(target, read(p, target));
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
