package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.testhost.Capability;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A restart that lands on another block of uids (another Crucible process holds the old one: the host-wide lease) gives
 * the kept sessions their new uids, so their files stay theirs.
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
}
