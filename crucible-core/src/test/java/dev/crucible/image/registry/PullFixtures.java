package dev.crucible.image.registry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.image.layer.CraftedLayer;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/** What the pull tests share: pullers, OCI layouts made by umoci, a progress recorder. */
final class PullFixtures {
    private PullFixtures() {}

    static ImagePuller puller() {
        return puller(Set.of(), Long.MAX_VALUE, RegistryCredentials.none());
    }

    static ImagePuller puller(Set<String> insecure, long maxBytes, RegistryCredentials credentials) {
        return new ImagePuller(new ImagePuller.Options(insecure, maxBytes, Duration.ofSeconds(20), credentials));
    }

    /** An OCI layout under a new directory of {@code parent} holding image {@code tag} of these layer tars. */
    static Path layout(Path parent, String tag, byte[]... layers) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory(parent, "layout");
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < layers.length; i++) {
            files.add(Files.write(dir.resolve("layer" + i + ".tar"), layers[i]));
        }
        return StoreFixtures.umociLayout(dir, tag, files.toArray(Path[]::new));
    }

    /** A layer with one file. */
    static byte[] layer(String name, String content) {
        return new CraftedLayer().file(name, content).plain();
    }

    /** Pulls and commits: the image is visible in the store with its root unpacked. */
    static Image pullToRoot(ImagePuller puller, ImageRef ref, ImageStore store) throws IOException {
        return puller.pull(ref, store, ImagePuller.Progress.NONE);
    }

    static void assertFile(Image image, String name, String content) throws IOException {
        assertThat(Files.readString(image.rootfs().resolve(name), StandardCharsets.UTF_8)).isEqualTo(content);
    }

    /** Progress as lines: {@code started D size already}, {@code done D size fetched}, {@code unpacking N}. */
    static final class Recorder implements ImagePuller.Progress {
        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void blobStarted(String digest, long size, long already) {
            events.add("started " + digest + " " + size + " " + already);
        }

        @Override
        public void blobDone(String digest, long size, boolean fetched) {
            events.add("done " + digest + " " + size + " " + fetched);
        }

        @Override
        public void unpacking(int layers) {
            events.add("unpacking " + layers);
        }

        List<String> done() {
            return events.stream().filter(e -> e.startsWith("done ")).toList();
        }
    }
}
