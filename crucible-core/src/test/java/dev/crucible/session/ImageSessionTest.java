package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.TestImages;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionInfo;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A session in an image keeps the digest it started on: after a server restart it resumes in the same image. */
class ImageSessionTest {
    static final String ME = "owner-image";

    @Test
    void aSessionInAnImageResumesInItAfterARestart(@TempDir Path data) throws Exception {
        Image image = TestImages.debianPython(TestHost.images());
        Crucible c = TestHost.crucible();
        SessionConfig config = SessionConfig.defaults(data);
        String id;
        try (SessionManager first = SessionManager.start(c.sandbox(), c.runtimes(), config)) {
            SessionInfo s = first.create(ME, new SessionManager.CreateRequest("python", null, null, "replay",
                    TestImages.DEBIAN_PYTHON));
            id = s.id();
            assertThat(s.imageDigest()).isEqualTo(image.digest());
            assertThat(first.execute(ME, id, "import tabulate\nrows = [[3, 4]]", null, null).status().wireName())
                    .isEqualTo("ok");
        }
        try (SessionManager second = SessionManager.start(c.sandbox(), c.runtimes(), config)) {
            assertThat(second.get(ME, id).imageDigest()).isEqualTo(image.digest());
            CellResult resumed = second.execute(ME, id, "print(tabulate.tabulate(rows, tablefmt='plain'))", null, null);
            assertThat(resumed.resumed()).isTrue();
            assertThat(resumed.stdout()).as(resumed.stderr()).isEqualTo("3  4\n");
            // a command runs in the image's root too (its own /etc/os-release and its python's packages)
            var command = second.command(ME, id, CommandRequest.shell(
                    ". /etc/os-release; echo $ID; python3 -c 'import tabulate; print(tabulate.__name__)'"));
            assertThat(command.stdout()).as(command.stderr()).isEqualTo("debian\ntabulate\n");
            second.delete(ME, id);
        }
    }

    @Test
    void aSessionInALanguageTheImageLacksIsRefused(@TempDir Path data) {
        Crucible c = TestHost.crucible();
        assertThatThrownBy(() -> {
            TestImages.debianPython(TestHost.images());
            try (SessionManager m = SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data))) {
                m.create(ME, new SessionManager.CreateRequest("javascript", null, null, null, TestImages.DEBIAN_PYTHON));
            }
        }).extracting("code").isEqualTo(ErrorCode.RUNTIME_UNAVAILABLE);
    }
}
