package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestDirs;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible image build} as an operator runs it, on the real Debian image: steps from a file and from
 * {@code --run}, output streamed to stderr and the digest on stdout, then {@code crucible run --image TAG} runs in the
 * built image offline; a failing step is exit 82 and leaves no image.
 */
class ImageBuildIT {
    static Path data;

    @BeforeAll
    static void theBaseImageInAStore() throws Exception {
        data = TestDirs.create("crucible-image-build-it"); // deleted at exit
        TestImages.debianPython(ImageStore.open(data.resolve("images")));
    }

    @Test
    void aBuiltImageRunsOfflineWithWhatItsStepsDid() throws Exception {
        Path steps = Files.writeString(data.resolve("steps.txt"), """
                # the app
                mkdir -p /opt/app

                echo 'print(40 + 2)' > /opt/app/main.py
                """);
        CliIT.Outcome built = ImageIT.run(data, "", "image", "build", "--from", TestImages.DEBIAN_PYTHON,
                "--file", steps.toString(), "--run", "rm /etc/motd && echo hello-from-a-step", "--tag", "crucible.test/app:1");
        assertThat(built.exit()).as(built.stderr()).isZero();
        assertThat(built.stderr()).contains("step 1/3: mkdir -p /opt/app", "step 3/3: rm /etc/motd",
                "hello-from-a-step", "committing one layer", "built crucible.test/app:1 (layer sha256:");
        String digest = built.stdout().strip();
        assertThat(digest).matches("sha256:[0-9a-f]{64}");

        CliIT.Outcome ran = ImageIT.run(data, "import os\nexec(open('/opt/app/main.py').read())\n"
                + "print(os.path.exists('/etc/motd'))", "run", "--image", "crucible.test/app:1", "-l", "python", "-");
        assertThat(ran.exit()).as(ran.stderr()).isZero();
        assertThat(ran.stdout()).isEqualTo("42\nFalse\n");

        JsonNode images = ImageIT.JSON.readTree(ImageIT.run(data, "", "image", "ls", "--json").stdout());
        assertThat(images.valueStream().filter(i -> i.get("digest").asString().equals(digest)).count()).isEqualTo(1);
    }

    @Test
    void aFailingStepIsExit82WithItsOutputTailAndLeavesNoImage() throws Exception {
        CliIT.Outcome failed = ImageIT.run(data, "", "image", "build", "-q", "--from", TestImages.DEBIAN_PYTHON,
                "--run", "touch /opt/first", "--run", "echo doomed >&2; exit 3", "--tag", "crucible.test/app:bad");
        assertThat(failed.exit()).as(failed.stderr()).isEqualTo(ExitCodes.BUILD_STEP_FAILED);
        assertThat(failed.stdout()).isEmpty();
        assertThat(failed.stderr().strip().lines()).containsExactly("doomed",
                "crucible: step 2/2 (echo doomed >&2; exit 3) failed with exit code 3; nothing was committed");
        assertThat(ImageIT.run(data, "", "image", "inspect", "crucible.test/app:bad").exit())
                .isEqualTo(ExitCodes.IMAGE_NOT_FOUND);

        CliIT.Outcome noSteps = ImageIT.run(data, "", "image", "build", "--from", TestImages.DEBIAN_PYTHON,
                "--tag", "crucible.test/app:bad");
        CliIT.assertOneLineError(noSteps, "no steps");
        assertThat(noSteps.exit()).isEqualTo(ExitCodes.USAGE);
    }

    @Test
    void aDockerfileBuildsFromItsContextAndALineOutsideTheSubsetIsRefusedNamingIt() throws Exception {
        Path context = Files.createDirectories(data.resolve("docker-context"));
        Files.writeString(context.resolve("main.py"), "import os\nprint(os.environ['GREETING'], 40 + 2)\n");
        Path dockerfile = Files.writeString(data.resolve("Dockerfile"), """
                FROM %s
                ARG WHO=nobody
                ENV GREETING="hello $WHO"
                WORKDIR /opt/app
                COPY main.py .
                RUN python3 main.py > built.txt
                CMD ["python3", "/opt/app/main.py"]
                """.formatted(TestImages.DEBIAN_PYTHON));
        CliIT.Outcome built = ImageIT.run(data, "", "image", "build", "-f", dockerfile.toString(),
                "--build-arg", "WHO=docker", context.toString(), "-t", "crucible.test/docker:1");
        assertThat(built.exit()).as(built.stderr()).isZero();
        assertThat(built.stderr()).contains("step 4/6: COPY main.py .", "step 5/6: python3 main.py > built.txt");
        CliIT.Outcome ran = ImageIT.run(data, "print(open('/opt/app/built.txt').read().strip())", "run", "--image",
                "crucible.test/docker:1", "-l", "python", "-");
        assertThat(ran.stdout()).as(ran.stderr()).isEqualTo("hello docker 42\n");

        Files.writeString(dockerfile, "FROM " + TestImages.DEBIAN_PYTHON + "\n\nVOLUME /data\n");
        CliIT.Outcome refused = ImageIT.run(data, "", "image", "build", "-f", dockerfile.toString(), "-t",
                "crucible.test/docker:2");
        CliIT.assertOneLineError(refused, "Dockerfile line 3: VOLUME is not supported");
        assertThat(refused.exit()).isEqualTo(ExitCodes.INVALID_REQUEST);
    }
}
