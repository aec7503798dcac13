package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.TestDirs;
import dev.crucible.image.Images;
import dev.crucible.image.build.BuildResult;
import dev.crucible.image.build.ImageBuilder;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.SandboxConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 25, item 3: no code an image brings runs with a zygote's privileges. An image's Python runs its own start-up
 * code before any program: here a {@code .pth} file of its site-packages that, wherever it runs with a capability,
 * leaves a mark in the only writable place a zygote has (its control directory) and says so. On an engine whose
 * zygotes are on, a run in that image must see the image's start-up code run with no capability at all, no mark may
 * appear, and the image's runtime must not be one a zygote forks.
 */
class ImageCodeOutOfZygoteTest {
    private static final String PROBE = String.join("\n",
            "import os, sys",
            "caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff:')][0]",
            "print('image start-up code ran with CapEff=' + caps, file=sys.stderr)",
            "if int(caps, 16):",
            "    for d in ('/tmp/.crucible-zygote', '/tmp', '/workspace'):",
            "        try:",
            "            open(d + '/image-code-was-privileged', 'w').write(caps)",
            "        except OSError:",
            "            pass",
            "");
    static Path storeDir;
    static Crucible engine;
    static String tag = "crucible.test/site-probe:1";

    @BeforeAll
    static void buildTheImage() throws Exception {
        storeDir = TestDirs.create("crucible-test-zygote-images"); // deleted at exit
        ImageStore store = ImageStore.open(storeDir);
        TestImages.debianPython(store);
        engine = Crucible.start(SandboxConfig.defaults().withSlots(4), null, Images.of(store,
                Images.PullPolicy.never()));
        String probe = Base64.getEncoder().encodeToString(PROBE.getBytes(StandardCharsets.UTF_8));
        BuildResult built = new ImageBuilder(store, engine.sandbox(), ImageBuilder.Options.defaults()).build(
                new ImageBuilder.Recipe(TestImages.DEBIAN_PYTHON, List.of(
                        "d=$(python3 -c 'import site; print(site.getsitepackages()[0])') && mkdir -p \"$d\""
                                + " && echo " + probe + " | base64 -d > \"$d/crucible_probe.py\""
                                + " && echo 'import crucible_probe' > \"$d/zz-crucible-probe.pth\""),
                        tag), ImageBuilder.Listener.NONE);
        assertThat(built).isInstanceOf(BuildResult.Built.class);
    }

    @AfterAll
    static void stop() {
        engine.close();
    }

    @Test
    void anImagesStartUpCodeRunsOnlyInTheRunsOwnSandboxWithNoCapability() throws Exception {
        ExecuteResult r = engine.executor().execute(ExecuteRequest.of("python", "print('program')").withImage(tag));
        assertThat(r.status().wireName()).as(r.stderr()).isEqualTo("ok");
        assertThat(r.stdout()).isEqualTo("program\n");
        try (Stream<Path> files = Files.walk(engine.sandbox().host().workRoot())) {
            assertThat(files.filter(p -> p.getFileName().toString().equals("image-code-was-privileged")).toList())
                    .as("no mark of image code run with a capability").isEmpty();
        }
        assertThat(r.stderr()).as("the image's own start-up code ran, unprivileged, in the run's sandbox")
                .contains("image start-up code ran with CapEff=0000000000000000");
        // a host run starts the host's zygote: it must stay the only one
        assertThat(engine.executor().execute(ExecuteRequest.of("python", "print(1)")).stdout()).isEqualTo("1\n");
        assertThat(engine.sandbox().forks(WarmPool.launchSpec(engine.executor().runtimeFor("python", tag))))
                .as("an image's runtime is never forked from a zygote").isFalse();
        assertThat(engine.sandbox().forks(WarmPool.launchSpec(engine.executor().runtimeFor("python"))))
                .as("the host's Python still is").isTrue();
        assertThat(engine.sandbox().host().describe()).anyMatch(line -> line.contains("image runtimes"));
    }
}
