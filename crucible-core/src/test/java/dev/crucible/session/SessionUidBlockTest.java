package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A restart that lands on another block of uids (another Crucible process holds the old one: the host-wide lease) gives
 * the kept sessions their new uids, so their files stay theirs: a session's workspace, and a session with a root of its
 * own its whole disk (what root wrote in /etc, /root and /usr, a package it installed), each file at the same uid
 * inside, none left to the old block (which that server gives its next session of the same number).
 */
class SessionUidBlockTest {
    @Test
    void aSessionKeptOnDiskWorksAfterARestartOnAnotherUidBlock(@TempDir Path data) throws Exception {
        Capability.ROOT.require(); // only root runs sessions as uids of their own
        RuntimeRegistry runtimes = RuntimeRegistry.load(null);
        SessionConfig config = SessionConfig.defaults(data);
        String id;
        try (Sandbox first = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2))) {
            SessionManager before = SessionManager.start(first, runtimes, config);
            id = before.create("me", new SessionManager.CreateRequest("python", null, null, null)).id();
            assertThat(before.execute("me", id, "import os\nos.makedirs('d')\nopen('d/a.txt', 'w').write('kept')",
                    null, null).status().wireName()).isEqualTo("ok");
            before.close();
            // `first` still holds its block: the restart below takes the next one
            try (Sandbox second = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2))) {
                assertThat(second.host().uidBase()).isNotEqualTo(first.host().uidBase());
                SessionManager after = SessionManager.start(second, runtimes, config);
                try {
                    CellResult r = after.execute("me", id, "open('d/b.txt', 'w').write(open('d/a.txt').read())\n"
                            + "import os\n(os.getuid(), open('d/b.txt').read())", null, null);
                    assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
                    assertThat(r.result()).isEqualTo("(1000, 'kept')");
                } finally {
                    after.delete("me", id);
                    after.close();
                }
            }
        }
    }

    @Test
    void aSessionsOwnRootStaysRootsAfterARestartOnAnotherUidBlock(@TempDir Path data) throws Exception {
        Capability.ROOT.require(); // only root runs sessions as uids of their own
        RuntimeRegistry runtimes = RuntimeRegistry.load(null);
        SessionConfig config = SessionConfig.defaults(data);
        String pkg = "crucible-moved-" + ProcessHandle.current().pid();
        try (Sandbox first = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2))) {
            SessionManager before = SessionManager.start(first, runtimes, config);
            String id = before.create("me", new SessionManager.CreateRequest("python", null, null, null)).id();
            Path disk = data.resolve("sessions").resolve(id).resolve("disk");
            Capability.SESSION_ROOTS.require(Files.isDirectory(disk) ? null
                    : "this host gives sessions no root of their own (not root, no loop mounts, or a kernel before 5.19)");
            Capability.DPKG.require();
            CommandResult made = asRoot(before, id, String.join("\n", "set -e",
                    "echo x > /etc/app.conf; touch /root/mark; echo five > /etc/five; chown 5:7 /etc/five",
                    "echo nobody > /etc/nobody; chown nobody:nogroup /etc/nobody",
                    "cp /bin/true /usr/local/bin/suid-true; chmod 4755 /usr/local/bin/suid-true",
                    "mkdir -p /tmp/pkg/DEBIAN /tmp/pkg/usr/bin",
                    "printf 'Package: " + pkg + "\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: t <t@t.invalid>\\n"
                            + "Description: one file\\n' > /tmp/pkg/DEBIAN/control",
                    "printf '#!/bin/sh\\necho moved says hi\\n' > /tmp/pkg/usr/bin/" + pkg,
                    "chmod 755 /tmp/pkg/usr/bin/" + pkg,
                    "dpkg-deb --root-owner-group --build /tmp/pkg /tmp/" + pkg + ".deb >/dev/null",
                    "DEBIAN_FRONTEND=noninteractive apt-get -q install -y /tmp/" + pkg + ".deb >/tmp/install.log 2>&1"
                            + " || { cat /tmp/install.log; exit 1; }",
                    "echo done"));
            assertThat(made.stdout()).as(made.toString()).endsWith("done\n");
            assertThat(before.command("me", id, CommandRequest.shell("echo hi > /home/user/f; echo w > w.txt"))
                    .exitCode()).isZero();
            long oldUser = Integer.toUnsignedLong((Integer) Files.getAttribute(disk.resolveSibling("workspace"),
                    "unix:uid", LinkOption.NOFOLLOW_LINKS));
            long oldBlock = LaunchCommand.ROOT_UID_BASE + oldUser * LaunchCommand.ROOT_BLOCK;
            before.close();
            // `first` still holds its block: the restart below takes the next one
            try (Sandbox second = BwrapSandbox.create(SandboxConfig.defaults().withSlots(2))) {
                assertThat(second.host().uidBase()).isNotEqualTo(first.host().uidBase());
                SessionManager after = SessionManager.start(second, runtimes, config);
                try {
                    CommandResult root = asRoot(after, id, "pwd; stat -c '%u:%g %n' /etc/app.conf /root/mark /etc/five"
                            + " /etc/nobody /home/user/f /workspace/w.txt /usr/bin/" + pkg + "; stat -c %a"
                            + " /usr/local/bin/suid-true; cat /etc/app.conf; echo y >> /etc/app.conf && echo appended; "
                            + pkg + "; dpkg-query -W -f '${Status}\\n' " + pkg);
                    assertThat(root.stdout()).as(root.toString()).isEqualTo(String.join("\n", "/root",
                            "0:0 /etc/app.conf", "0:0 /root/mark", "5:7 /etc/five", "65534:65534 /etc/nobody",
                            "1000:1000 /home/user/f", "1000:1000 /workspace/w.txt", "0:0 /usr/bin/" + pkg, "4755", "x",
                            "appended", "moved says hi", "install ok installed", ""));
                    CommandResult user = after.command("me", id, CommandRequest.shell("id -u; cat /home/user/f w.txt;"
                            + " (echo z >> /etc/app.conf) 2>/dev/null || echo etc-denied"));
                    assertThat(user.stdout()).as(user.toString()).isEqualTo("1000\nhi\nw\netc-denied\n");

                    assertThat(ownersOnTheDisk(disk)).as("no file left to the old block or the old user")
                            .noneMatch(owner -> owner == oldUser
                                    || owner >= oldBlock && owner < oldBlock + LaunchCommand.ROOT_BLOCK);
                } finally {
                    after.delete("me", id);
                    after.close();
                }
            }
        }
    }

    private static CommandResult asRoot(SessionManager sessions, String id, String line) throws Exception {
        return sessions.command("me", id, new CommandRequest(line, null, null, null, null, null,
                CommandRequest.User.ROOT, null));
    }

    /** Every owner and group (host uids, unsigned) of every file on a session's disk, as the host sees them. */
    private static List<Long> ownersOnTheDisk(Path disk) throws Exception {
        List<Long> owners = new ArrayList<>();
        try (var walk = Files.walk(disk)) {
            for (Path p : walk.toList()) {
                owners.add(Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)));
                owners.add(Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:gid", LinkOption.NOFOLLOW_LINKS)));
            }
        }
        return owners;
    }
}
