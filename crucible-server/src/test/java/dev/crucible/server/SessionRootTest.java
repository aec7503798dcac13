package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A session's own file system and its root inside (issue 27 items 1 and 3), against the real server and sandbox: the
 * user cannot write the system, root inside can, and what it writes lands on the session's disk as its own block's
 * uids, never the host's /usr; root inside is still refused what a container's root is refused (mounts, devices, the
 * kernel's settings, namespaces, raw sockets, foreign uids); the root survives a restart of the server and goes, mounts
 * and all, with the session.
 */
class SessionRootTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String MARK = "crucible-root-test-" + ProcessHandle.current().pid();

    private static JsonNode run(Http http, String id, String user, String line) throws Exception {
        HttpResponse<String> r = http.postJson("/v1/sessions/" + id + "/commands", JSON.writeValueAsString(
                user == null ? Map.of("command", line) : Map.of("command", line, "user", user)));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return SessionApiTest.json(r);
    }

    @Test
    void theSessionsRootIsItsOwnAndRootInsideIsNoRootOutside() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of());
        Path sessionsDir = config.sessions().dataDir().resolve("sessions");
        String id;
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            id = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}")).get("id").asString();
            Path dir = sessionsDir.resolve(id);
            Capability.SESSION_ROOTS.require(Files.isDirectory(dir.resolve("disk")) ? null
                    : "this host gives sessions no root of their own (not root, no loop mounts, or a kernel before 5.19)");

            JsonNode user = run(http, id, null, "id -un; touch /usr/lib/" + MARK + " 2>/dev/null || echo usr-denied;"
                    + " echo hi > /home/user/f && echo home; (echo x > /etc/" + MARK + ") 2>/dev/null || echo etc-denied");
            assertThat(user.get("stdout").asString()).isEqualTo("user\nusr-denied\nhome\netc-denied\n");

            JsonNode root = run(http, id, "root", "id -u; echo made > /usr/lib/" + MARK + " && echo usr;"
                    + " echo ok > /etc/" + MARK + " && echo etc; chown 1000 /etc/" + MARK + " && echo chown;"
                    + " chown 70000 /etc/" + MARK + " 2>/dev/null || echo unmapped");
            assertThat(root.get("stdout").asString()).isEqualTo("0\nusr\netc\nchown\nunmapped\n");
            assertThat(Path.of("/usr/lib", MARK)).as("the host's /usr is untouched").doesNotExist();

            // what root inside may still not do: each attempt prints its name only if it got through
            JsonNode refused = run(http, id, "root", String.join("; ",
                    "mount -t tmpfs x /mnt 2>/dev/null && echo MOUNTED",
                    "mknod /tmp/sda b 8 0 2>/dev/null && echo DEVICE",
                    "echo x > /proc/sys/kernel/core_pattern 2>/dev/null && echo SYSCTL",
                    "echo b > /proc/sysrq-trigger 2>/dev/null && echo SYSRQ",
                    "unshare -U true 2>/dev/null && echo USERNS",
                    "unshare -m true 2>/dev/null && echo MOUNTNS",
                    "python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>/dev/null"
                            + " && echo PACKET",
                    "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)' 2>/dev/null"
                            + " && echo RAW",
                    "cat /proc/2/environ >/dev/null 2>&1 && echo SUPERVISOR",
                    "date -s 2000-01-01 >/dev/null 2>&1 && echo CLOCK",
                    "hostname evil 2>/dev/null && echo HOSTNAME",
                    "echo done"));
            assertThat(refused.get("stdout").asString()).isEqualTo("done\n");

            // root's own home: nothing the user planted in /workspace (.local, .gitconfig…) is read as root
            assertThat(run(http, id, "root", "echo $HOME $USER; pwd").get("stdout").asString())
                    .isEqualTo("/root root\n/root\n");

            // on the host: the session's disk holds it, owned by the session's own block of uids
            int sessionUid = (Integer) Files.getAttribute(dir.resolve("workspace"), "unix:uid", LinkOption.NOFOLLOW_LINKS);
            long rootUid = (1L << 31) + (long) sessionUid * 4096;
            Path upper = dir.resolve("disk/r/usr-upper/lib").resolve(MARK);
            assertThat(Integer.toUnsignedLong((Integer) Files.getAttribute(upper, "unix:uid", LinkOption.NOFOLLOW_LINKS)))
                    .isEqualTo(rootUid);
            assertThat((Integer) Files.getAttribute(dir.resolve("disk/r/root/etc").resolve(MARK), "unix:uid",
                    LinkOption.NOFOLLOW_LINKS)).as("chown 1000 inside is the session's uid outside").isEqualTo(sessionUid);
            assertThat(mountsUnder(dir)).as("only the disk and its workspace bind on the host").hasSize(2);

            // a host user's private file in /usr is nobody's inside, the session's user's (1000) no more than root's
            Path secret = Path.of("/usr/local/share", MARK + "-private");
            try {
                Files.writeString(secret, "host user's\n");
                Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
                Files.setAttribute(secret, "unix:uid", 1000, LinkOption.NOFOLLOW_LINKS);
                String probe = "cat " + secret + " 2>/dev/null || echo unreadable";
                assertThat(run(http, id, null, probe).get("stdout").asString()).isEqualTo("unreadable\n");
                assertThat(run(http, id, "root", probe).get("stdout").asString()).isEqualTo("unreadable\n");
            } finally {
                Files.deleteIfExists(secret);
            }

            // another session deleted while this one runs goes whole: its disk is not kept by this one's launcher
            String other = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}"))
                    .get("id").asString();
            assertThat(http.delete("/v1/sessions/" + other).statusCode()).isEqualTo(200);
            // its killed sandbox's mount namespace (the disk's last mount) ends a moment after its last process: the
            // loop device goes then, unless another launcher kept the mount (the hole this guards)
            Awaitility.await("the deleted session's loop device detached")
                    .atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> {
                        Process losetup = new ProcessBuilder("losetup", "-a").redirectErrorStream(true).start();
                        String loops = new String(losetup.getInputStream().readAllBytes());
                        losetup.waitFor();
                        assertThat(loops).as("no loop device left on the deleted session's image").doesNotContain(other);
                    });
        }
        try (CrucibleServer again = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(again, null);
            JsonNode kept = run(http, id, null, "cat /usr/lib/" + MARK + " /etc/" + MARK + " /home/user/f");
            assertThat(kept.get("stdout").asString()).as("kept across a restart").isEqualTo("made\nok\nhi\n");
            assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
            assertThat(mountsUnder(sessionsDir.resolve(id))).isEmpty();
            assertThat(sessionsDir.resolve(id)).doesNotExist();
        }
    }

    /**
     * apt-get and dpkg work for root inside, without a network: a package built in the session, served from a
     * {@code file:} repository, installed with {@code apt-get install}; dpkg's database then lists it, the user runs
     * it, a restart keeps it, and neither the host nor another session sees it (their dpkg databases included).
     */
    @Test
    void aptGetInstallsAPackageIntoTheSessionAlone() throws Exception {
        ServerConfig config = Http.config().withPort(0).withPool(Map.of());
        String pkg = "crucible-tiny-" + ProcessHandle.current().pid();
        String id;
        try (CrucibleServer server = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(server, null);
            id = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}")).get("id").asString();
            Capability.SESSION_ROOTS.require(Files.isDirectory(config.sessions().dataDir().resolve("sessions").resolve(id).resolve("disk")) ? null
                    : "this host gives sessions no root of their own (not root, no loop mounts, or a kernel before 5.19)");
            Capability.DPKG.require();
            String deb = "/opt/repo/" + pkg + "_1.0_all.deb";
            JsonNode install = run(http, id, "root", String.join("\n",
                    "set -e",
                    "mkdir -p /opt/repo /tmp/pkg/DEBIAN /tmp/pkg/usr/bin",
                    "printf 'Package: " + pkg + "\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: t <t@t.invalid>\\n"
                            + "Description: one file\\n' > /tmp/pkg/DEBIAN/control",
                    "printf '#!/bin/sh\\necho tiny says hi\\n' > /tmp/pkg/usr/bin/" + pkg,
                    "chmod 755 /tmp/pkg/usr/bin/" + pkg,
                    "dpkg-deb --root-owner-group --build /tmp/pkg " + deb + " >/dev/null",
                    "{ dpkg-deb -f " + deb + "; echo Filename: ./" + pkg + "_1.0_all.deb; echo Size: $(stat -c%s " + deb
                            + "); echo SHA256: $(sha256sum " + deb + " | cut -d' ' -f1); echo; } > /opt/repo/Packages",
                    "gzip -k /opt/repo/Packages",
                    "rm -f /etc/apt/sources.list.d/* /etc/apt/sources.list",
                    "echo 'deb [trusted=yes] file:/opt/repo ./' > /etc/apt/sources.list.d/local.list",
                    "apt-get -q update >/tmp/update.log 2>&1 || { cat /tmp/update.log; exit 1; }",
                    "DEBIAN_FRONTEND=noninteractive apt-get -q install -y " + pkg + " >/tmp/install.log 2>&1"
                            + " || { cat /tmp/install.log; exit 1; }",
                    "echo installed"));
            assertThat(install.get("stdout").asString()).as(install.toString()).endsWith("installed\n");
            JsonNode used = run(http, id, null, pkg + "; dpkg-query -W -f '${Status}\\n' " + pkg
                    + "; ls /etc/apt/auth.conf.d 2>/dev/null | wc -l; cat /etc/shadow 2>/dev/null || echo no-shadow");
            assertThat(used.get("stdout").asString()).isEqualTo("tiny says hi\ninstall ok installed\n0\nno-shadow\n");
            assertThat(Path.of("/usr/bin", pkg)).as("the host's /usr is untouched").doesNotExist();
            assertThat(Files.readString(Path.of("/var/lib/dpkg/status"))).as("the host's dpkg knows nothing of it")
                    .doesNotContain(pkg);

            String other = SessionApiTest.json(http.postJson("/v1/sessions", "{\"language\": \"python\"}"))
                    .get("id").asString();
            JsonNode elsewhere = run(http, other, "root", "dpkg-query -W " + pkg + " >/dev/null 2>&1 && echo LISTED;"
                    + " command -v " + pkg + " || echo absent");
            assertThat(elsewhere.get("stdout").asString()).isEqualTo("absent\n");
        }
        try (CrucibleServer again = CrucibleServer.start(config, TestHost.crucible())) {
            Http http = Http.to(again, null);
            JsonNode kept = run(http, id, null, pkg + "; dpkg-query -W -f '${Version}\\n' " + pkg);
            assertThat(kept.get("stdout").asString()).as("kept across a restart").isEqualTo("tiny says hi\n1.0\n");
        }
    }

    private static List<String> mountsUnder(Path dir) throws Exception {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(line -> line.split(" ")[4].startsWith(dir.toString())).toList();
    }
}
