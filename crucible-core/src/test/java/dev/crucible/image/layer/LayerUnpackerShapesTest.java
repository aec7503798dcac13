package dev.crucible.image.layer;

import static dev.crucible.image.layer.Sentinels.inode;
import static dev.crucible.image.layer.Sentinels.mode;
import static dev.crucible.image.layer.Sentinels.names;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.testhost.Capability;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link LayerUnpacker} makes of an image's shape: skipped entry types, the modes and owner it keeps, no extended
 * attribute, the mount points {@code finish} makes, and real image trees; on real files beside a sentinel tree
 * ({@code outside/}) that every test checks is unchanged, with nothing new beside the root.
 */
class LayerUnpackerShapesTest extends UnpackBesideSentinels {
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    @TempDir
    Path scratch;

    /** What "unchanged" means for the sentinel tree. */
    private static final String SNAPSHOT = "unix:mode,nlink,ino,uid";

    LayerUnpackerShapesTest() {
        super(SNAPSHOT, true);
    }

    // ---- skipped types, modes, ownership, xattrs ----

    @Test
    void devicesFifosSocketsAndUnknownTypesAreSkipped() throws IOException {
        TarArchiveEntry socket = new TarArchiveEntry("run/sock");
        socket.setMode(0140755);
        apply(new CraftedLayer().special("dev/null", TarConstants.LF_CHR).special("dev/sda", TarConstants.LF_BLK)
                .special("run/fifo", TarConstants.LF_FIFO).entry(socket, new byte[0]).special("weird", (byte) 'Z')
                .file("ok", "ok").plain(), "sha256:special");

        assertThat(unpacker.skipped()).isEqualTo(5);
        assertThat(unpacker.entries()).isEqualTo(6);
        assertThat(names(root)).containsExactly("ok");
    }

    @Test
    void onlyMode0755IsKeptAndEverythingBelongsToTheUnpacker() throws IOException {
        int me = (int) Files.getAttribute(base, "unix:uid");
        CraftedLayer layer = new CraftedLayer().file("suid", "x", 04755).file("sgid", "x", 02750).file("world", "x", 0666)
                .file("none", "x", 0).dir("sticky/", 01777).dir("ro/", 0500).file("ro/inner", "i", 0644);
        apply(layer.owned(4242, 4343).gzip(), "sha256:modes");
        assertThat(mode(root.resolve("ro"))).isEqualTo(0700);

        apply(new CraftedLayer().file("ro/later", "l").gzip(), "sha256:later");
        unpacker.finish();

        assertThat(mode(root.resolve("suid"))).isEqualTo(0755);
        assertThat(mode(root.resolve("sgid"))).isEqualTo(0750);
        assertThat(mode(root.resolve("world"))).isEqualTo(0644);
        assertThat(mode(root.resolve("none"))).isEqualTo(0);
        assertThat(mode(root.resolve("sticky"))).isEqualTo(0755);
        assertThat(mode(root.resolve("ro"))).isEqualTo(0500);
        assertThat(root.resolve("ro/later")).hasContent("l");
        for (String name : List.of("suid", "sticky", "ro/inner")) {
            assertThat(Files.getAttribute(root.resolve(name), "unix:uid")).isEqualTo(me);
            assertThat(Files.getAttribute(root.resolve(name), "unix:gid")).isNotEqualTo(4343);
        }
    }

    @Test
    void noExtendedAttributeIsEverSet() throws IOException, InterruptedException {
        TarArchiveEntry ping = new TarArchiveEntry("usr/bin/ping");
        ping.addPaxHeader("SCHILY.xattr.security.capability", "\u0001\u0000\u0000\u0002\u0000\u0020\u0000\u0000");
        ping.addPaxHeader("SCHILY.xattr.user.planted", "yes");
        ping.addPaxHeader("LIBARCHIVE.xattr.user.other", "eWVz");
        ping.setMode(04755);
        apply(new CraftedLayer().entry(ping, "PING".getBytes(StandardCharsets.UTF_8)).gzip(), "sha256:xattr");

        Path file = root.resolve("usr/bin/ping");
        assertThat(file).hasContent("PING");
        assertThat(mode(file)).isEqualTo(0755);
        Capability.GETFATTR.require();
        Process getfattr = new ProcessBuilder("/usr/bin/getfattr", "-d", "-m", "-", file.toString())
                .redirectErrorStream(true).start();
        String attributes = new String(getfattr.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(getfattr.waitFor()).isZero();
        assertThat(attributes).doesNotContain("security.capability", "user.planted", "user.other");
    }

    // ---- real shapes ----

    @Test
    void aRealImageShapeUnpacks() throws IOException {
        String longDir = "usr/lib/python3/" + "x".repeat(60);
        String longFile = longDir + "/" + "y".repeat(80) + ".py";
        String longTarget = "../" + "z".repeat(120) + "/target";
        apply(new CraftedLayer().dir("./").dir("usr/").dir("usr/bin/").dir("usr/lib/").symlink("bin", "usr/bin")
                .symlink("lib", "usr/lib").file("usr/bin/busybox", "BUSYBOX", 0755).hardlink("./usr/bin/ls",
                        "usr/bin/busybox").hardlink("usr/bin/cat", "/usr/bin/busybox").symlink("usr/bin/sh",
                        "/bin/busybox").dir(longDir + "/").file(longFile, "long").symlink("usr/lib/longlink",
                        longTarget).file("opt/thing/inner", "i").file("srv/data", "file-data").gzip(), "sha256:base");
        assertThat(Files.getAttribute(root.resolve("usr/bin/busybox"), "unix:nlink")).isEqualTo(3);
        assertThat(inode(root.resolve("usr/bin/ls"))).isEqualTo(inode(root.resolve("usr/bin/busybox")));

        apply(new CraftedLayer().file("opt/thing", "now a file").dir("srv/data/").file("srv/data/inner", "inner")
                .file("usr/bin/ls", "LS").zstd(), "sha256:top");
        unpacker.finish();

        assertThat(Files.readSymbolicLink(root.resolve("bin"))).hasToString("usr/bin");
        assertThat(Files.readSymbolicLink(root.resolve("usr/bin/sh"))).hasToString("/bin/busybox");
        assertThat(Files.readSymbolicLink(root.resolve("usr/lib/longlink"))).hasToString(longTarget);
        assertThat(root.resolve("bin/busybox")).hasContent("BUSYBOX");
        assertThat(root.resolve("usr/bin/cat")).hasContent("BUSYBOX");
        assertThat(Files.getAttribute(root.resolve("usr/bin/busybox"), "unix:nlink")).isEqualTo(2);
        assertThat(root.resolve("usr/bin/ls")).hasContent("LS");
        assertThat(root.resolve(longFile)).hasContent("long");
        assertThat(root.resolve("opt/thing")).hasContent("now a file");
        assertThat(root.resolve("srv/data/inner")).hasContent("inner");
        assertThat(mode(root.resolve("usr/bin/busybox"))).isEqualTo(0755);
    }

    @Test
    void finishMakesTheMountPointsReplacingWhatIsNotOne() throws IOException {
        apply(new CraftedLayer().dir("var/tmp/").file("var/tmp/kept", "k").symlink("tmp", "/var/tmp")
                .symlink("proc", outsideAbsolute).file("dev", "not a dir").symlink("etc/passwd", outsideAbsolute
                        + "/secret").file("etc/hosts", "127.0.0.1 localhost\n").dir("etc/group/").gzip(), "sha256:m");

        unpacker.finish();

        for (String dir : List.of("proc", "dev", "tmp", "workspace", "build", "etc")) {
            assertThat(root.resolve(dir)).isDirectory();
            assertThat(Files.isSymbolicLink(root.resolve(dir))).isFalse();
            assertThat(mode(root.resolve(dir))).isEqualTo(0755);
        }
        assertThat(names(root.resolve("tmp"))).isEmpty();
        assertThat(root.resolve("var/tmp/kept")).hasContent("k");
        for (String file : List.of("passwd", "group")) {
            assertThat(Files.isRegularFile(root.resolve("etc").resolve(file), NOFOLLOW)).isTrue();
            assertThat(root.resolve("etc").resolve(file)).isEmptyFile();
            assertThat(mode(root.resolve("etc").resolve(file))).isEqualTo(0644);
        }
        assertThat(Files.readString(root.resolve("etc/hosts"))).isEqualTo("127.0.0.1 localhost\n");
        assertThat(mode(root)).isEqualTo(0755);
        assertThatThrownBy(() -> unpacker.apply(new ByteArrayInputStream(new CraftedLayer().plain()), "sha256:late"))
                .isInstanceOf(IllegalStateException.class);
    }

    /** A real Debian tree (Python packages of the host, a few thousand entries) through a gzip layer. */
    @Test
    void aRealDebianFileTreeUnpacks() throws IOException {
        Path packages = Path.of("/usr/lib/python3/dist-packages");
        List<String> subsets = List.of("pip", "pygments", "matplotlib/backends");
        Capability.MATPLOTLIB.require(subsets.stream().allMatch(s -> Files.isDirectory(packages.resolve(s)))
                ? null : "the host has no " + packages + " with " + subsets + " (python3-matplotlib, python3-pip)");
        Path layer = scratch.resolve("debian.tar.gz");
        String prefix = "usr/lib/python3/dist-packages/";
        Map<String, String> expected = new TreeMap<>();
        try (OutputStream file = Files.newOutputStream(layer); GZIPOutputStream gzip = new GZIPOutputStream(file);
                TarArchiveOutputStream tar = CraftedLayer.stream(gzip)) {
            for (String subset : subsets) {
                try (Stream<Path> walk = Files.walk(packages.resolve(subset))) {
                    for (Path p : walk.toList()) {
                        String name = prefix + packages.relativize(p);
                        addHostPath(tar, p, name);
                        expected.put(name, describe(p));
                    }
                }
            }
        }

        try (InputStream in = Files.newInputStream(layer)) {
            unpacker.apply(in, "sha256:debian");
        }
        unpacker.finish();

        Map<String, String> unpacked = new TreeMap<>();
        for (String subset : subsets) {
            try (Stream<Path> walk = Files.walk(root.resolve(prefix + subset))) {
                for (Path p : walk.toList()) {
                    unpacked.put(root.relativize(p).toString(), describe(p));
                }
            }
        }
        assertThat(unpacked).hasSize(expected.size()).isEqualTo(expected);
        assertThat(Files.readAllBytes(root.resolve(prefix + "pip/__init__.py")))
                .isEqualTo(Files.readAllBytes(packages.resolve("pip/__init__.py")));
    }

    // ---- helpers ----

    private void apply(byte[] blob, String digest) throws IOException {
        unpacker.apply(new ByteArrayInputStream(blob), digest);
    }

    /** Type, mode (as the unpacker keeps it), size and link target or content digest of one path. */
    private static String describe(Path p) throws IOException {
        if (Files.isSymbolicLink(p)) {
            return "link " + Files.readSymbolicLink(p);
        }
        String kind = Files.isDirectory(p, NOFOLLOW) ? "dir" : "file " + Files.size(p) + " "
                + Arrays.hashCode(Files.readAllBytes(p));
        return kind + " " + Integer.toOctalString(mode(p) & 0755);
    }

    /** Adds the host path {@code p} (directory, symlink or regular file) as {@code name}. */
    private static void addHostPath(TarArchiveOutputStream tar, Path p, String name) throws IOException {
        TarArchiveEntry e;
        if (Files.isSymbolicLink(p)) {
            e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK);
            e.setLinkName(Files.readSymbolicLink(p).toString());
        } else if (Files.isDirectory(p, NOFOLLOW)) {
            e = new TarArchiveEntry(name + "/", TarConstants.LF_DIR);
        } else {
            e = new TarArchiveEntry(name);
            e.setSize(Files.size(p));
        }
        e.setMode(mode(p));
        tar.putArchiveEntry(e);
        if (Files.isRegularFile(p, NOFOLLOW)) {
            Files.copy(p, tar);
        }
        tar.closeArchiveEntry();
    }
}
