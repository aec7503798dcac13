package dev.crucible.sandbox.bwrap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestDirs;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;

/** What of the host's configuration a session's own root gets a copy of: only what every host user may read. */
class RootSkeletonTest {
    @Test
    void aCopyOfTheHostsConfigurationLeavesOutWhatNotEveryUserMayRead() throws Exception {
        Path host = TestDirs.create("crucible-skeleton-host-").resolve("apt");
        Files.createDirectories(host.resolve("apt.conf.d"));
        Files.writeString(host.resolve("apt.conf.d/10proxy"), "Acquire::http::Proxy \"none\";\n");
        Files.createDirectories(host.resolve("auth.conf.d"));
        Files.writeString(host.resolve("auth.conf.d/mirror.conf"), "machine m login l password p\n"); // 0644 even
        Files.writeString(host.resolve("auth.conf"), "machine m login l password p\n");
        Files.writeString(host.resolve("private.key"), "secret\n");
        Files.setPosixFilePermissions(host.resolve("private.key"), PosixFilePermissions.fromString("rw-r-----"));
        Path closed = Files.createDirectories(host.resolve("private"));
        Files.writeString(closed.resolve("readable-inside"), "secret too\n");
        Files.setPosixFilePermissions(closed, PosixFilePermissions.fromString("rwx--x---"));
        Files.createSymbolicLink(host.resolve("link"), Path.of("apt.conf.d/10proxy"));

        Path to = TestDirs.create("crucible-skeleton-root-").resolve("etc/apt");
        RootSkeleton.copyTree(host, to, true);

        try (var walk = Files.walk(to)) {
            assertThat(walk.map(p -> to.relativize(p).toString()).sorted().toList())
                    .containsExactly("", "apt.conf.d", "apt.conf.d/10proxy", "link");
        }
        assertThat(Files.readSymbolicLink(to.resolve("link"))).isEqualTo(Path.of("apt.conf.d/10proxy"));
    }

    @Test
    void aNameThatIsNotUtf8IsCopiedByItsBytes() throws Exception {
        // /etc/ssl/certs has such names (NetLock_Arany_=Class_Gold=_F\xf5tan\xfas\xedtv\xe1ny.pem, Latin-1): a copy
        // through a decoded String fails where the JVM's charset is ASCII (LANG unset) and mangles it elsewhere
        Path host = TestDirs.create("crucible-skeleton-latin1-").resolve("certs");
        Files.createDirectories(host);
        Path to = TestDirs.create("crucible-skeleton-latin1-root-").resolve("etc/ssl/certs");
        String names = "import os, sys; print(sorted(os.listdir(os.fsencode(sys.argv[1]))))";
        Process make = new ProcessBuilder("/usr/bin/python3", "-c", "import os, sys; open(os.path.join(os.fsencode("
                + "sys.argv[1]), b'F\\xf5tan\\xfas.pem'), 'w').write('x')", host.toString()).start();
        assertThat(make.waitFor()).isZero();

        RootSkeleton.copyTree(host, to, true);

        Process list = new ProcessBuilder("/usr/bin/python3", "-c", names, to.toString()).start();
        assertThat(new String(list.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip())
                .isEqualTo("[b'F\\xf5tan\\xfas.pem']");
    }
}
