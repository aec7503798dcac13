package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.image.Images;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.TestImages;
import dev.crucible.pool.WarmPool;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Programs run in a real image (Debian bookworm with Python and tabulate, built by mmdebstrap): the image's root is
 * the sandbox's {@code /}, read-only, with Crucible's own /tmp, /workspace, /proc, /dev and identity files; its Env
 * under the runtime's; results carry its digest.
 */
class ImageRunTest {
    static Image image;

    @BeforeAll
    static void commitTheImage() throws Exception {
        image = TestImages.debianPython(TestHost.images());
    }

    private static ExecuteResult run(String code) throws InterruptedException {
        return TestHost.crucible().executor().execute(ExecuteRequest.of("python", code).withImage(TestImages.DEBIAN_PYTHON));
    }

    @Test
    void aProgramInTheImageSeesWhatOnlyTheImageHasAndTheResultCarriesItsDigest() throws Exception {
        String code = "import tabulate, sys\nprint(tabulate.tabulate([[1, 2]], tablefmt='plain'))\nprint(sys.executable)\n"
                + "print(open('/etc/os-release').read().split('\\n')[0])";
        ExecuteResult r = run(code);
        assertThat(r.status().wireName()).as(r.stderr()).isEqualTo("ok");
        assertThat(r.stdout()).contains("1  2").contains("/usr/bin/python3").contains("Debian GNU/Linux 12");
        assertThat(r.imageDigest()).isEqualTo(image.digest()).startsWith("sha256:");
        ExecuteResult onHost = TestHost.crucible().executor().execute(ExecuteRequest.of("python", "import tabulate"));
        assertThat(onHost.stderr()).as("the host has no tabulate: the first run really was in the image")
                .contains("ModuleNotFoundError");
        assertThat(onHost.imageDigest()).isNull();
    }

    @Test
    void theImageRootIsReadOnlyWhileTmpAndWorkspaceAreFreshAndWritable() throws Exception {
        String code = String.join("\n",
                "import os, socket",
                "for p in ['/usr/lib/planted', '/etc/planted', '/planted', '/var/planted', '/root/planted']:",
                "    try:",
                "        open(p, 'w').write('x'); print('WROTE', p)",
                "    except OSError as e:",
                "        print('refused', p, e.errno)",
                "open('/tmp/t', 'w').write('t'); open('/workspace/w', 'w').write('w')",
                "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/workspace')))",
                "print(os.getuid(), socket.gethostname())",
                "print(open('/etc/passwd').read().count('\\n'), 'sandbox:x:1000' in open('/etc/passwd').read())");
        ExecuteResult r = run(code);
        assertThat(r.status().wireName()).as(r.stderr()).isEqualTo("ok");
        assertThat(r.stdout()).doesNotContain("WROTE").contains("refused /usr/lib/planted 30")
                .contains("refused /etc/planted 30").contains("refused /planted 30");
        assertThat(r.stdout()).contains("['t'] ['main.py', 'w']").contains("1000 sandbox").contains("3 True");
        assertThat(image.rootfs().resolve("planted")).doesNotExist();
        ExecuteResult again = run("import os; print(sorted(os.listdir('/tmp')), os.path.exists('/workspace/w'))");
        assertThat(again.stdout()).as("nothing of a run is left for the next").isEqualTo("[] False\n");
    }

    @Test
    void theImageEnvIsSetUnderTheRuntimesAndNothingOfTheHosts() throws Exception {
        ExecuteResult r = run("import os; print(os.environ.get('CRUCIBLE_TEST_IMAGE'), os.environ['PATH'], "
                + "os.environ['HOME'], 'SERVER_API_TOKEN' in os.environ)");
        assertThat(r.stdout()).isEqualTo("debian-python /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "
                + "/workspace False\n");
    }

    @Test
    void anUnknownImageIsRefusedWithThePullCommand() {
        assertThatThrownBy(() -> TestHost.crucible().executor().execute(
                ExecuteRequest.of("python", "print(1)").withImage("crucible.test/not-here:1")))
                .isInstanceOfSatisfying(RequestException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.IMAGE_NOT_FOUND);
                    assertThat(e.getMessage()).contains("crucible image pull crucible.test/not-here:1");
                });
        assertThatThrownBy(() -> TestHost.crucible().executor().execute(
                ExecuteRequest.of("python", "print(1)").withImage("Not A Reference")))
                .isInstanceOfSatisfying(RequestException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_REQUEST));
    }

    @Test
    void aLanguageWhoseToolsAreNotInTheImageIsUnavailableThere() {
        assertThatThrownBy(() -> TestHost.crucible().executor().runtimeFor("javascript", TestImages.DEBIAN_PYTHON))
                .isInstanceOfSatisfying(RequestException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.RUNTIME_UNAVAILABLE);
                    assertThat(e.getMessage()).contains("node is not in image");
                });
    }

    @Test
    void aCompiledLanguageIsNotNeededForBashWhichTheImageHas() throws Exception {
        ExecuteResult r = TestHost.crucible().executor().execute(
                ExecuteRequest.of("bash", "cat /etc/debian_version; echo $BASH_VERSION").withImage(image.digest()));
        assertThat(r.status().wireName()).as(r.stderr()).isEqualTo("ok");
        assertThat(r.stdout()).startsWith("12.");
        assertThat(r.imageDigest()).isEqualTo(image.digest());
    }

    @Test
    void aRuntimeFileMayNameAnImageAndIsUnavailableUntilItIsPulled(@TempDir Path dir) throws Exception {
        Path toml = dir.resolve("runtimes.toml");
        Files.writeString(toml, """
                [[runtime]]
                language = "py-debian"
                file_name = "main.py"
                run_command = ["python3", "{file}"]
                image = "%s"
                env = { CRUCIBLE_TEST_IMAGE = "overridden" }

                [[runtime]]
                language = "py-missing"
                file_name = "main.py"
                run_command = ["python3", "{file}"]
                image = "crucible.test/missing:1"
                """.formatted(TestImages.DEBIAN_PYTHON));
        Images images = TestHost.crucible().runtimes().images();
        RuntimeRegistry registry = RuntimeRegistry.load(toml, images);
        LanguageRuntime debian = registry.find("py-debian").orElseThrow();
        assertThat(debian.available()).as(String.valueOf(debian.unavailableReason())).isTrue();
        assertThat(debian.image().digest()).isEqualTo(image.digest());
        assertThat(debian.runCommand().getFirst()).isEqualTo("/usr/bin/python3");
        assertThat(debian.env()).containsEntry("CRUCIBLE_TEST_IMAGE", "overridden")
                .containsEntry("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        LanguageRuntime missing = registry.find("py-missing").orElseThrow();
        assertThat(missing.available()).isFalse();
        assertThat(missing.unavailableReason()).contains("run: crucible image pull crucible.test/missing:1");
    }

    @Test
    void theWarmPoolKeepsSandboxesOfAnImageApartFromTheHosts() throws Exception {
        Crucible engine = TestHost.crucible();
        WarmPool pool = engine.startPool(Map.of("python@" + TestImages.DEBIAN_PYTHON, 1));
        try {
            LanguageRuntime inImage = engine.executor().runtimeFor("python", TestImages.DEBIAN_PYTHON);
            assertThat(pool.serves(inImage, inImage.limits())).isTrue();
            assertThat(pool.serves(engine.executor().runtimeFor("python"), inImage.limits())).isFalse();
            long hits = pool.hits();
            ExecuteResult r = null;
            for (int i = 0; i < 50 && pool.hits() == hits; i++) { // the first may come before the pool is filled
                r = run("import tabulate; print('pooled')");
            }
            assertThat(pool.hits()).as("a request in the image was served by the image's pool").isGreaterThan(hits);
            assertThat(r.stdout()).isEqualTo("pooled\n");
            assertThat(r.imageDigest()).isEqualTo(image.digest());
        } finally {
            engine.startPool(Map.of());
        }
        TestHost.assertNothingLeft();
    }
}
