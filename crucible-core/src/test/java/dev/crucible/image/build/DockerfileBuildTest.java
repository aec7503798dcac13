package dev.crucible.image.build;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestHost;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import dev.crucible.testhost.NetnsHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Dockerfiles built on the real Debian image and the real sandbox: files copied from the context, the environment,
 * working directory and start command in the image's config; a context or root that tries to lead a copy out of
 * where it belongs is refused and nothing outside is read or written.
 */
class DockerfileBuildTest {
    @RegisterExtension
    static final NetnsHost HOST = NetnsHost.extension();
    static ImageStore store;
    static ImageBuilder builder;

    @BeforeAll
    static void theBaseImage() throws Exception {
        store = TestHost.images();
        TestImages.debianPython(store);
        builder = new ImageBuilder(store, TestHost.crucible().sandbox(), ImageBuilder.Options.defaults());
    }

    private static BuildResult build(String dockerfile, Path context, String tag) throws Exception {
        Dockerfile.Parsed parsed = Dockerfile.parse(dockerfile, Map.of("VERSION", "2.0"));
        return builder.build(new ImageBuilder.Plan(parsed.from(), parsed.steps(), tag, context),
                ImageBuilder.Listener.NONE);
    }

    private static ExecuteResult runIn(String image, String code) throws InterruptedException {
        return TestHost.crucible().executor().execute(ExecuteRequest.of("python", code).withImage(image));
    }

    @Test
    void aDockerfileCopiesItsContextRunsInItsWorkdirWithItsEnvAndSetsTheStartCommand(@TempDir Path context)
            throws Exception {
        Files.createDirectories(context.resolve("app/sub"));
        Files.writeString(context.resolve("app/main.py"), "print('main')\n");
        Files.writeString(context.resolve("app/sub/data.txt"), "data\n");
        Files.createSymbolicLink(context.resolve("app/inner"), Path.of("sub/data.txt"));
        Files.writeString(context.resolve("req.txt"), "tabulate\n");
        BuildResult result = build("""
                ARG VERSION=1.0
                FROM %s
                ARG VERSION
                ENV APP_HOME=/opt/app \\
                    GREETING="hello world"
                WORKDIR $APP_HOME
                COPY --chmod=755 app/ ./
                COPY req.txt /etc/req-$VERSION.txt
                COPY *.txt /opt/glob/
                RUN ["/bin/sh", "-c", "pwd > where && echo $GREETING $VERSION > env.txt"]
                RUN <<EOF
                set -e
                mkdir -p /opt/here
                echo heredoc > /opt/here/doc
                EOF
                USER 1000
                EXPOSE 8080
                CMD ["python3", "main.py"]
                """.formatted(TestImages.DEBIAN_PYTHON), context, "crucible.test/docker:one");

        assertThat(result).isInstanceOf(BuildResult.Built.class);
        Image image = ((BuildResult.Built) result).image();
        assertThat(image.workingDir()).isEqualTo("/opt/app");
        assertThat(image.cmd()).containsExactly("python3", "main.py");
        assertThat(image.env()).contains("APP_HOME=/opt/app", "GREETING=hello world")
                .noneMatch(e -> e.startsWith("VERSION="));
        String config = new String(store.smallBlob(image.id()));
        assertThat(config).contains("\"User\":\"1000\"", "\"ExposedPorts\":{\"8080/tcp\":{}}");

        ExecuteResult r = runIn("crucible.test/docker:one", String.join("\n",
                "import os",
                "print(open('/opt/app/main.py').read().strip(), oct(os.stat('/opt/app/main.py').st_mode & 0o777))",
                "print(os.readlink('/opt/app/inner'), open('/opt/app/sub/data.txt').read().strip())",
                "print(open('/etc/req-2.0.txt').read().strip(), sorted(os.listdir('/opt/glob')))",
                "print(open('/opt/app/where').read().strip(), open('/opt/app/env.txt').read().strip())",
                "print(open('/opt/here/doc').read().strip())"));
        assertThat(r.stdout()).as(r.stderr()).isEqualTo("print('main') 0o755\nsub/data.txt data\n"
                + "tabulate ['req.txt']\n/opt/app hello world 2.0\nheredoc\n");
        TestHost.assertNothingLeft();
    }

    @Test
    void aCopyOutOfItsContextOrOntoWhatASandboxMountsIsRefusedAndNothingIsCommitted(@TempDir Path dir)
            throws Exception {
        Path context = Files.createDirectory(dir.resolve("context"));
        Path outside = Files.writeString(dir.resolve("secret"), "host secret\n");
        Files.writeString(context.resolve("ok.txt"), "ok\n");
        Files.createSymbolicLink(context.resolve("escape"), Path.of("../secret"));
        Files.createSymbolicLink(context.resolve("absolute"), outside);
        Files.createDirectory(context.resolve("dir"));
        Files.createSymbolicLink(context.resolve("dir/out"), outside);
        new ProcessBuilder("mkfifo", context.resolve("fifo").toString()).start().waitFor();
        String from = "FROM " + TestImages.DEBIAN_PYTHON + "\n";
        for (String[] c : List.of(
                new String[] {"COPY ../secret /opt/", "outside the build context"},
                new String[] {"COPY escape /opt/x", "leads out of the build context"},
                new String[] {"COPY absolute /opt/x", "leads out of the build context"},
                new String[] {"COPY fifo /opt/x", "not a regular file or directory"},
                new String[] {"COPY ok.txt /proc/x", "a sandbox mounts its own /proc"},
                new String[] {"WORKDIR /workspace/app", "a sandbox mounts its own /workspace"},
                new String[] {"COPY missing /opt/", "not in the build context"})) {
            String tag = "crucible.test/docker:refused";
            assertThatThrownBy(() -> build(from + c[0] + "\n", context, tag)).as(c[0])
                    .isInstanceOfSatisfying(ImageException.class, e -> {
                        assertThat(e.failure()).isEqualTo(ImageException.Failure.INVALID_BUILD);
                        assertThat(e.getMessage()).contains(c[1]);
                    });
            assertThat(store.find(tag)).isEmpty();
        }

        Path hostDir = Files.createDirectory(dir.resolve("host-dir"));
        String plant = from + "RUN ln -s " + hostDir + " /opt/planted && ln -s " + outside + " /opt/file"
                + " && mkdir /opt/real && ln -s real /opt/inside\n";
        assertThatThrownBy(() -> build(plant + "COPY ok.txt /opt/planted/\n", context, "crucible.test/docker:refused"))
                .isInstanceOfSatisfying(ImageException.class,
                        e -> assertThat(e.getMessage()).contains("/opt/planted", "links resolve within the image"));
        BuildResult result = build(plant + "COPY dir ok.txt /opt/inside/\nCOPY ok.txt /opt/file\n", context,
                "crucible.test/docker:links");
        assertThat(result).isInstanceOf(BuildResult.Built.class);
        assertThat(hostDir).isEmptyDirectory();
        assertThat(Files.readString(outside)).isEqualTo("host secret\n");
        ExecuteResult r = runIn("crucible.test/docker:links", "import os\nprint(os.readlink('/opt/real/out'),"
                + " open('/opt/file').read().strip(), os.path.islink('/opt/file'), sorted(os.listdir('/opt/real')))");
        assertThat(r.stdout()).as(r.stderr()).isEqualTo(outside + " ok False ['ok.txt', 'out']\n");
        TestHost.assertNothingLeft();
    }
}
