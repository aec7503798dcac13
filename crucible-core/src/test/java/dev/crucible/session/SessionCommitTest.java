package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.spec.CommitResult;
import dev.crucible.session.spec.SessionConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.zip.GZIPInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session committed to an image (issue 30, item 4): its workspace becomes one layer over the session's image, and a
 * session made in the new image starts with those files (a package it installed imports), owned by its own uid; what
 * it deletes is gone from the next commit; nothing but {@code /workspace} is in the layer, links stay links; a
 * session on the host's file system has no image to commit over.
 */
class SessionCommitTest {
    static final String ME = "owner-commit";

    private static String sh(SessionManager m, String id, String line) throws Exception {
        var r = m.command(ME, id, CommandRequest.shell(line));
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        return r.stdout();
    }

    @Test
    void aCommittedWorkspaceIsAnImageWhoseSessionsStartWithItsFiles(@TempDir Path data) throws Exception {
        Image base = TestImages.debianPython(TestHost.images());
        ImageStore store = TestHost.images();
        Crucible c = TestHost.crucible();
        String tag = "local/committed-" + UUID.randomUUID().toString().substring(0, 8);
        try (SessionManager m = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data))) {
            String id = m.create(ME, new SessionManager.CreateRequest("python", null, null, null,
                    TestImages.DEBIAN_PYTHON)).id();
            sh(m, id, "cd /workspace && mkdir -p lib/greet && printf 'def hi():\\n    return \"hi from greet\"\\n'"
                    + " > lib/greet/__init__.py && echo scratch > scratch.txt && ln -s /etc/hostname host-link");
            CommitResult first = m.pauses(ME, id).commit(tag + ":1");
            assertThat(first.base()).isEqualTo(base.digest());
            assertThat(first.image()).endsWith(tag.substring(tag.indexOf('/') + 1) + ":1");
            assertThat(first.whiteouts()).isZero();
            Image committed = store.find(tag + ":1").orElseThrow();
            assertThat(committed.layers()).hasSize(base.layers().size() + 1);
            try (var in = new TarArchiveInputStream(new GZIPInputStream(Files.newInputStream(
                    store.blob(committed.layers().getLast()))))) {
                for (TarArchiveEntry e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
                    assertThat(e.getName()).as("only the workspace is committed").startsWith("workspace/");
                    if (e.getName().endsWith("host-link")) {
                        assertThat(e.isSymbolicLink()).as("a link stays a link").isTrue();
                    }
                }
            }
            assertThat(m.execute(ME, id, "1 + 1", null, null).result()).as("the session goes on").isEqualTo("2");

            String child = m.create(ME, new SessionManager.CreateRequest("python", null, null, null, tag + ":1")).id();
            var imported = m.execute(ME, child, "import sys; sys.path.insert(0, '/workspace/lib'); import greet;"
                    + " greet.hi()", null, null);
            assertThat(imported.result()).as(imported.stderr()).isEqualTo("'hi from greet'");
            assertThat(sh(m, child, "stat -c %u /workspace/scratch.txt")).as("the files are the new session's")
                    .isEqualTo(sh(m, child, "id -u"));
            assertThat(sh(m, child, "readlink /workspace/host-link")).isEqualTo("/etc/hostname\n");
            sh(m, child, "rm /workspace/scratch.txt && echo more > /workspace/more.txt");
            CommitResult second = m.pauses(ME, child).commit(tag + ":2");
            assertThat(second.base()).isEqualTo(committed.digest());
            assertThat(second.whiteouts()).as("what the session deleted").isEqualTo(1);
            String grandchild = m.create(ME, new SessionManager.CreateRequest("python", null, null, null, tag + ":2"))
                    .id();
            assertThat(sh(m, grandchild, "ls /workspace")).isEqualTo("host-link\nlib\nmore.txt\n");
        } finally {
            store.remove(tag + ":2");
            store.remove(tag + ":1");
        }
    }

    @Test
    void aSessionOnTheHostsFileSystemOrWithABadTagIsRefused(@TempDir Path data) throws Exception {
        TestImages.debianPython(TestHost.images());
        Crucible c = TestHost.crucible();
        try (SessionManager m = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data))) {
            String host = m.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            assertThatThrownBy(() -> m.pauses(ME, host).commit("local/never:1")).extracting("code")
                    .isEqualTo(ErrorCode.COMMIT_UNAVAILABLE);
            String inImage = m.create(ME, new SessionManager.CreateRequest("python", null, null, null,
                    TestImages.DEBIAN_PYTHON)).id();
            for (String bad : new String[] {"", "Not Valid", "local/x@sha256:" + "0".repeat(64)}) {
                assertThatThrownBy(() -> m.pauses(ME, inImage).commit(bad)).as(bad).extracting("code")
                        .isEqualTo(ErrorCode.INVALID_REQUEST);
            }
        }
    }
}
