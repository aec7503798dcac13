package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.RequestException;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10, class 4: deleting a session removes everything, whatever modes its sandbox left, without following a
 * link; the record that makes it a session goes first, and it never comes back after a restart.
 */
class SessionDeleteHostileTest {
    static final String ME = "owner-a";

    static SessionManager start(Path data) throws Exception {
        Crucible c = TestHost.crucible();
        return SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data));
    }

    @Test
    void aSessionThatTookItsOwnPermissionsAwayIsGoneForGoodAfterDelete(@TempDir Path data) throws Exception {
        Path outside = Files.writeString(data.resolve("outside.txt"), "keep me");
        SessionManager sessions = start(data);
        String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
        CellResult r = sessions.execute(ME, id, """
                import os
                os.makedirs('a/b/c')
                for d in ('a', 'a/b', 'a/b/c'):
                    open(d + '/f', 'w').write('x')
                os.symlink('%s', 'a/b/c/link-out')
                os.symlink('/workspace/a', 'a/b/loop')
                os.mkfifo('a/fifo')
                for d in ('a/b/c', 'a/b', 'a'):
                    os.chmod(d, 0)
                os.chmod('/workspace', 0o100)  # search only: nothing can be listed or removed
                'done'
                """.formatted(outside), null, null);
        assertThat(r.result()).as(r.toString()).isEqualTo("'done'");
        Path dir = data.resolve("sessions").resolve(id);
        assertThat(dir).exists();

        sessions.delete(ME, id);
        assertThat(dir).as("the whole session directory").doesNotExist();
        assertThat(Files.readString(outside)).as("a link was not followed").isEqualTo("keep me");
        sessions.close();

        SessionManager again = start(data);
        try {
            assertThatThrownBy(() -> again.get(ME, id)).isInstanceOf(RequestException.class);
            assertThat(again.list(ME)).isEmpty();
        } finally {
            again.close();
        }
    }

    @Test
    void aDeleteCutShortNeverBringsTheSessionBack(@TempDir Path data) throws Exception {
        SessionManager sessions = start(data);
        String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
        sessions.execute(ME, id, "import os\nos.makedirs('d/e')\nos.chmod('d/e', 0)\nos.chmod('d', 0)", null, null);
        sessions.close();
        Path dir = data.resolve("sessions").resolve(id);
        // what a crash right after the first step of a delete leaves: everything but the record
        Files.delete(dir.resolve("session.json"));

        SessionManager again = start(data);
        try {
            assertThatThrownBy(() -> again.get(ME, id)).isInstanceOf(RequestException.class);
            assertThat(dir).as("swept at start").doesNotExist();
        } finally {
            again.close();
        }
    }
}
