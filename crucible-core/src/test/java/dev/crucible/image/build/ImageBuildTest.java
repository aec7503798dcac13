package dev.crucible.image.build;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.egress.PackageIndex;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import dev.crucible.sandbox.Verdict;
import dev.crucible.testhost.Capability;
import dev.crucible.testhost.NetnsHost;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code crucible image build} on the real Debian image and the real sandbox: steps change a private writable copy of
 * the root as root of their user namespace, the changes become one layer (whiteouts for deletions, nothing of what a
 * sandbox mounts), and the new image runs through the engine like any other while the base stays as it was.
 */
class ImageBuildTest {
    @RegisterExtension
    static final NetnsHost HOST = NetnsHost.extension();
    static Image base;
    static ImageStore store;
    static ImageBuilder builder;

    @BeforeAll
    static void theBaseImage() throws Exception {
        store = TestHost.images();
        base = TestImages.debianPython(store);
        builder = new ImageBuilder(store, TestHost.crucible().sandbox(), ImageBuilder.Options.defaults());
    }

    /** Records what a build reports. */
    static final class Recorder implements ImageBuilder.Listener {
        final List<String> started = new ArrayList<>();
        final StringBuilder output = new StringBuilder();

        @Override
        public void stepStarted(int number, int count, String command) {
            started.add(number + "/" + count);
        }

        @Override
        public synchronized void chunk(boolean stderr, byte[] bytes, int length) {
            output.append(new String(bytes, 0, length, StandardCharsets.UTF_8));
        }
    }

    private static ExecuteResult runIn(String image, String code) throws InterruptedException {
        return TestHost.crucible().executor().execute(ExecuteRequest.of("python", code).withImage(image));
    }

    @Test
    void aBuiltImageRunsWithWhatItsStepsAddedAndWithoutWhatTheyDeletedWhileTheBaseStaysAsItWas() throws Exception {
        String issueBefore = Files.readString(base.rootfs().resolve("etc/issue"));
        Recorder recorder = new Recorder();
        BuildResult result = builder.build(new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON, List.of(
                "mkdir -p /opt/tool/bin && printf 'built\\n' > /opt/tool/bin/data && chmod 711 /opt/tool/bin",
                "ln -s /opt/tool/bin/data /opt/link && echo 'built by crucible' >> /etc/issue && id -u > /opt/uid",
                "rm /etc/motd && rm -r /usr/share/base-files && mkdir /usr/share/base-files"
                        + " && echo new > /usr/share/base-files/only",
                "echo step output; touch /tmp/t /workspace/w /build/b"),
                "crucible.test/built:one"), recorder);

        assertThat(result).as(recorder.output.toString()).isInstanceOf(BuildResult.Built.class);
        BuildResult.Built built = (BuildResult.Built) result;
        assertThat(recorder.started).containsExactly("1/4", "2/4", "3/4", "4/4");
        assertThat(recorder.output).contains("step output");
        assertThat(built.image().layers()).hasSize(base.layers().size() + 1).endsWith(built.layer())
                .startsWith(base.layers().toArray(String[]::new));
        assertThat(built.whiteouts()).isGreaterThanOrEqualTo(2);

        ExecuteResult r = runIn("crucible.test/built:one", String.join("\n",
                "import os, tabulate",
                "print(open('/opt/tool/bin/data').read().strip(), os.readlink('/opt/link'), open('/opt/uid').read().strip())",
                "print(oct(os.stat('/opt/tool/bin').st_mode & 0o777), open('/etc/issue').read().splitlines()[-1])",
                "print(os.path.exists('/etc/motd'), sorted(os.listdir('/usr/share/base-files')))",
                "print(os.path.exists('/build/b'), os.path.exists('/tmp/t'), tabulate.__name__)"));
        assertThat(r.status().wireName()).as(r.stderr()).isEqualTo("ok");
        assertThat(r.stdout()).isEqualTo("built /opt/tool/bin/data 0\n0o711 built by crucible\nFalse ['only']\n"
                + "False False tabulate\n");
        assertThat(r.imageDigest()).isEqualTo(built.image().digest());

        assertThat(store.find(TestImages.DEBIAN_PYTHON).orElseThrow().digest()).isEqualTo(base.digest());
        assertThat(Files.readString(base.rootfs().resolve("etc/issue"))).isEqualTo(issueBefore);
        assertThat(base.rootfs().resolve("etc/motd")).exists();
        assertThat(base.rootfs().resolve("opt/tool")).doesNotExist();
        ExecuteResult inBase = runIn(TestImages.DEBIAN_PYTHON, "import os\nprint(os.path.exists('/etc/motd'),"
                + " os.path.exists('/opt/link'), len(os.listdir('/usr/share/base-files')) > 1)");
        assertThat(inBase.stdout()).isEqualTo("True False True\n");
        assertThat(leftInStaging()).as("the build's copy is gone").isEmpty();
        TestHost.assertNothingLeft();
    }

    @Test
    void theLayerHoldsTheChangesAndWhiteoutsOwnedByRootAndNothingASandboxMounts(@TempDir Path host) throws Exception {
        Path hostFile = Files.writeString(host.resolve("canary"), "host");
        Path hostDir = Files.createDirectory(host.resolve("dir"));
        Path hostDirFile = Files.writeString(hostDir.resolve("inside"), "host");
        BuildResult.Built built = (BuildResult.Built) builder.build(new ImageBuilder.Recipe(base.digest(), List.of(
                "rm /etc/motd && echo x > /opt/added && mkfifo /opt/fifo && ln -s " + hostFile + " /opt/host-link"
                        + " && ln -s " + hostDir + " /opt/host-dir",
                "touch /tmp/t /workspace/w /build/b /dev/shm/s; ls /proc > /dev/null"),
                "crucible.test/built:layer"), ImageBuilder.Listener.NONE);

        Map<String, TarArchiveEntry> entries = layerEntries(built.layer());
        assertThat(entries.keySet()).containsExactly("etc/", "etc/.wh.motd", "opt/", "opt/added", "opt/host-dir",
                "opt/host-link");
        assertThat(entries.get("opt/host-link").getLinkName()).as("a link is stored, never followed")
                .isEqualTo(hostFile.toString());
        assertThat(entries.values()).allSatisfy(e -> {
            assertThat(e.getLongUserId()).isZero();
            assertThat(e.getLongGroupId()).isZero();
        });
        assertThat(built.entries()).isEqualTo(6);
        for (Path file : List.of(hostFile, hostDir, hostDirFile)) {
            assertThat(Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS))
                    .as("the second step was given the copy, not " + file + " through the links in it").isEqualTo(0);
        }
        assertThat(built.whiteouts()).isEqualTo(1);
        assertThat(store.find(base.digest()).orElseThrow().rootfs().resolve("etc/motd")).exists();
        assertThat(built.image().rootfs().resolve("etc/motd")).doesNotExist();
        assertThat(built.image().rootfs().resolve("opt/fifo")).doesNotExist();
    }

    @Test
    void stepsWithEgressFetchFromTheListedIndexOnlyAndTheBuiltImageRunsOffline() throws Exception {
        Capability.EGRESS.require(TestHost.crucible().sandbox().egressUnavailable());
        try (PackageIndex index = PackageIndex.start(HOST)) {
            String wheel = "http://" + index.allowEntry() + "/files/crucible_demo_b-1.0-py3-none-any.whl";
            String fetch = "python3 -c \"import urllib.request; urllib.request.urlretrieve('" + wheel
                    + "', '/opt/b.whl')\"";
            ImageBuilder withEgress = new ImageBuilder(store, TestHost.crucible().sandbox(),
                    ImageBuilder.Options.defaults().withEgress(EgressPolicy.parse(index.allowEntry())));
            Recorder recorder = new Recorder();
            BuildResult result = withEgress.build(new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON, List.of(fetch,
                    "mkdir -p /usr/local/lib/python3.11/dist-packages"
                            + " && python3 -m zipfile -e /opt/b.whl /usr/local/lib/python3.11/dist-packages/"
                            + " && rm /opt/b.whl"), "crucible.test/built:egress"), recorder);
            assertThat(result).as(recorder.output.toString()).isInstanceOf(BuildResult.Built.class);
            assertThat(index.requests()).contains("/files/crucible_demo_b-1.0-py3-none-any.whl");

            ExecuteResult r = runIn("crucible.test/built:egress",
                    "import crucible_demo_b, socket\nprint(crucible_demo_b.greet('the image'))\n"
                            + "try:\n    socket.socket(socket.AF_INET)\nexcept OSError as e:\n    print('offline', e.errno)");
            assertThat(r.stdout()).as(r.stderr()).isEqualTo("hello from the image\noffline 97\n");

            Recorder refused = new Recorder();
            BuildResult offline = builder.build(new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON, List.of(fetch),
                    "crucible.test/built:never"), refused);
            assertThat(offline).as("without --egress-allow a step has no network")
                    .isInstanceOf(BuildResult.StepFailed.class);
            assertThat(store.find("crucible.test/built:never")).isEmpty();
        }
        TestHost.assertNothingLeft();
    }

    @Test
    void aFailingStepStopsTheBuildWithItsExitCodeAndCommitsNothing() throws Exception {
        Recorder recorder = new Recorder();
        BuildResult result = builder.build(new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON, List.of(
                "touch /opt/first", "echo failing >&2; exit 3", "touch /opt/never"),
                "crucible.test/built:failed"), recorder);

        assertThat(result).isInstanceOfSatisfying(BuildResult.StepFailed.class, failed -> {
            assertThat(failed.step()).isEqualTo(2);
            assertThat(failed.exitCode()).isEqualTo(3);
            assertThat(failed.verdict()).isEqualTo(Verdict.RUNTIME_ERROR);
            assertThat(failed.outputTail()).isEqualTo("failing");
        });
        assertThat(recorder.started).containsExactly("1/3", "2/3");
        assertThat(store.find("crucible.test/built:failed")).isEmpty();
        assertThat(leftInStaging()).isEmpty();
    }

    @Test
    void aNameALayerCannotCarryOrAMissingBaseRefusesTheBuild() {
        assertThatThrownBy(() -> builder.build(new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON,
                List.of("touch /opt/.wh.sneaky"), "crucible.test/built:refused"), ImageBuilder.Listener.NONE))
                .isInstanceOfSatisfying(ImageException.class, e -> {
                    assertThat(e.failure()).isEqualTo(ImageException.Failure.UNSUPPORTED);
                    assertThat(e.getMessage()).contains("/opt/.wh.sneaky");
                });
        assertThatThrownBy(() -> builder.build(new ImageBuilder.Recipe("crucible.test/absent:1", List.of("true"),
                "crucible.test/built:refused"), ImageBuilder.Listener.NONE))
                .isInstanceOfSatisfying(ImageException.class,
                        e -> assertThat(e.failure()).isEqualTo(ImageException.Failure.NOT_FOUND));
        assertThatThrownBy(() -> builder.build(new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON, List.of("true"),
                "crucible.test/built@sha256:" + "0".repeat(64)), ImageBuilder.Listener.NONE))
                .isInstanceOfSatisfying(ImageException.class,
                        e -> assertThat(e.failure()).isEqualTo(ImageException.Failure.INVALID_REFERENCE));
    }

    @Test
    void aStepsFileIsOneCommandALineWithoutCommentsOrBlankLines() {
        assertThat(ImageBuilder.stepsOf("# set up\n\npip install a  \n  # indented comment\necho '#not a comment'\n"))
                .containsExactly("pip install a", "echo '#not a comment'");
    }

    private static Map<String, TarArchiveEntry> layerEntries(String digest) throws IOException {
        Map<String, TarArchiveEntry> entries = new LinkedHashMap<>();
        try (InputStream in = new GZIPInputStream(new BufferedInputStream(Files.newInputStream(store.blob(digest))));
                TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
            for (TarArchiveEntry e; (e = tar.getNextEntry()) != null; ) {
                entries.put(e.getName(), e);
            }
        }
        return entries;
    }

    private static List<Path> leftInStaging() throws IOException {
        try (Stream<Path> left = Files.list(store.dir().resolve("staging"))) {
            return left.toList();
        }
    }
}
