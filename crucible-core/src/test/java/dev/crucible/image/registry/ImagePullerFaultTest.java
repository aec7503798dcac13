package dev.crucible.image.registry;

import static dev.crucible.image.registry.PullFixtures.layer;
import static dev.crucible.image.registry.PullFixtures.puller;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.BlobWriter;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pulls that go wrong on the way, through a proxy in front of a real registry: a connection cut mid-blob (the next pull
 * resumes with a Range request and fetches no verified blob again), a registry that ignores ranges, a stall, altered
 * manifests, corrupted and overlong blobs. Nothing wrong ever becomes visible in the store.
 */
class ImagePullerFaultTest {
    @TempDir
    static Path shared;
    static TestRegistry registry;

    @TempDir
    Path temp;
    TestProxy proxy;

    @BeforeAll
    static void startRegistry() throws Exception {
        registry = TestRegistry.start(shared.resolve("registry"));
    }

    @AfterAll
    static void stopRegistry() throws Exception {
        if (registry != null) {
            registry.close();
        }
    }

    @BeforeEach
    void startProxy() throws Exception {
        proxy = TestProxy.start(registry.host());
    }

    @AfterEach
    void stopProxy() {
        proxy.close();
    }

    /** Pushes a one-layer image of about {@code bytes} random bytes; returns its manifest. */
    private ImageFormats.Manifest push(String repository, int bytes) throws Exception {
        byte[] random = new byte[bytes / 2];
        new Random().nextBytes(random);
        String digest = registry.pushImage(repository, "v1", layer("data.hex", HexFormat.of().formatHex(random)));
        return ImageFormats.manifest(registry.manifest(repository, digest), digest);
    }

    private ImageRef viaProxy(String reference) throws ImageException {
        return ImageRef.parse(proxy.host() + "/" + reference);
    }

    private static String assertFails(ImageException.Failure failure, String message, ThrowingCallable pull) {
        Throwable thrown = catchThrowable(pull);
        assertThat(thrown).isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                .isEqualTo(failure)).hasMessageContaining(message);
        System.err.println("[" + failure + "] " + thrown.getMessage());
        return thrown.getMessage();
    }

    /** Pushes an image of {@code count} layers of about {@code bytes} random bytes each; returns its manifest. */
    private ImageFormats.Manifest pushLayers(String repository, int count, int bytes) throws Exception {
        byte[][] layers = new byte[count][];
        for (int i = 0; i < count; i++) {
            byte[] random = new byte[bytes / 2];
            new Random().nextBytes(random);
            layers[i] = layer("data" + i + ".hex", HexFormat.of().formatHex(random));
        }
        String digest = registry.pushImage(repository, "v1", layers);
        return ImageFormats.manifest(registry.manifest(repository, digest), digest);
    }

    @Test
    void theLayersOfAnImageDownloadSeveralAtOnceAndNoMore() throws Exception {
        ImageFormats.Manifest manifest = pushLayers("parallel/app", 6, 200_000);
        proxy.throttleBlobs(400_000); // half a second a layer: downloads that overlap are seen to
        Image image = puller().pull(viaProxy("parallel/app:v1"), ImageStore.open(temp.resolve("store")),
                ImagePuller.Progress.NONE);
        assertThat(image.layers()).containsExactlyElementsOf(manifest.layers().stream()
                .map(ImageFormats.Descriptor::digest).toList());
        for (int i = 0; i < 6; i++) {
            assertThat(image.rootfs().resolve("data" + i + ".hex")).isRegularFile();
        }
        assertThat(proxy.maxBlobsAtOnce()).as("layers fetched at once, as docker does").isEqualTo(ImagePuller.PARALLEL);
    }

    @Test
    void aLayerCutWhileOthersDownloadFailsThePullAndKeepsWhatTheOthersFetched() throws Exception {
        ImageFormats.Manifest manifest = pushLayers("parallel/cut", 4, 400_000);
        ImageFormats.Descriptor cut = manifest.layers().get(1);
        proxy.cutOnce(path -> path.endsWith("/blobs/" + cut.digest()), 100_000);
        Path dir = temp.resolve("store");
        assertFails(ImageException.Failure.UNREACHABLE, "pull again to resume",
                () -> puller().fetch(viaProxy("parallel/cut:v1"), ImageStore.open(dir), ImagePuller.Progress.NONE));
        ImageStore store = ImageStore.open(dir);
        for (ImageFormats.Descriptor layer : manifest.layers()) {
            assertThat(store.hasBlob(layer.digest())).as(layer.digest()).isEqualTo(layer != cut);
        }
        proxy.clearRequests();
        Image image = puller().pull(viaProxy("parallel/cut:v1"), store, ImagePuller.Progress.NONE);
        assertThat(image.rootfs().resolve("data1.hex")).isRegularFile();
        assertThat(proxy.requests()).filteredOn(TestProxy.Seen::isBlob).as("only the cut layer, from where it broke")
                .singleElement().satisfies(seen -> assertThat(seen.range()).startsWith("bytes="));
    }

    @Test
    void aPullCutMidBlobResumesWithARangeAndFetchesNoVerifiedBlobAgain() throws Exception {
        ImageFormats.Manifest manifest = push("resume/app", 1 << 20);
        ImageFormats.Descriptor layer = manifest.layers().getFirst();
        proxy.cutOnce(path -> path.endsWith("/blobs/" + layer.digest()), 300_000);
        Path dir = temp.resolve("store");

        String message = assertFails(ImageException.Failure.UNREACHABLE, "pull again to resume",
                () -> puller().fetch(viaProxy("resume/app:v1"), ImageStore.open(dir), ImagePuller.Progress.NONE));
        assertThat(message).doesNotContain("no data"); // the connection broke: no waiting for the timeout
        long kept = Files.size(dir.resolve("partial/sha256-" + layer.digest().substring(7)));
        assertThat(kept).isPositive().isLessThan(layer.size());

        ImageStore store = ImageStore.open(dir); // as the next process would
        assertThat(store.hasBlob(manifest.config().digest())).isTrue();
        proxy.clearRequests();
        PullFixtures.Recorder progress = new PullFixtures.Recorder();
        Image image = puller().pull(viaProxy("resume/app:v1"), store, progress);

        assertThat(image.layers()).containsExactly(layer.digest()).allMatch(store::hasBlob);
        assertThat(image.rootfs().resolve("data.hex")).isRegularFile();
        assertThat(proxy.requests()).filteredOn(TestProxy.Seen::isBlob)
                .containsExactly(new TestProxy.Seen("GET", "/v2/resume/app/blobs/" + layer.digest(),
                        "bytes=" + kept + "-", null));
        assertThat(progress.events).contains("started " + layer.digest() + " " + layer.size() + " " + kept,
                "done " + manifest.config().digest() + " " + manifest.config().size() + " false",
                "done " + layer.digest() + " " + layer.size() + " true", "unpacking 1");
    }

    @Test
    void aPullKilledMidBlobResumesFromWhatReachedTheDisk() throws Exception {
        ImageFormats.Manifest manifest = push("killed/app", 1 << 20);
        ImageFormats.Descriptor layer = manifest.layers().getFirst();
        proxy.stallOnce(path -> path.endsWith("/blobs/" + layer.digest()), 300_000);
        Path dir = temp.resolve("store");
        Path partial = dir.resolve("partial/sha256-" + layer.digest().substring(7));
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process pull = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), PullProcess.class.getName(),
                proxy.host() + "/killed/app:v1", dir.toString()).inheritIO().start();
        try {
            await("the pull's first bytes of the layer on disk, or its end").atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> Files.exists(partial) && Files.size(partial) > 0 || !pull.isAlive());
            assertThat(pull.isAlive()).as("the pull stalls mid-blob").isTrue();
        } finally {
            pull.destroyForcibly().waitFor(); // SIGKILL: what its buffers held is lost, the file keeps the rest
        }
        long kept = Files.size(partial);
        assertThat(kept).isPositive().isLessThan(layer.size());
        proxy.clearRequests();

        Image image = puller().pull(viaProxy("killed/app:v1"), ImageStore.open(dir), ImagePuller.Progress.NONE);

        assertThat(image.rootfs().resolve("data.hex")).isRegularFile();
        assertThat(proxy.requests()).filteredOn(TestProxy.Seen::isBlob).extracting(TestProxy.Seen::range)
                .containsExactly("bytes=" + kept + "-");
    }

    @Test
    void aRegistryThatIgnoresRangesIsFetchedFromTheStart() throws Exception {
        ImageFormats.Descriptor layer = push("norange/app", 256 << 10).layers().getFirst();
        byte[] bytes = Files.readAllBytes(registry.blobFile(layer.digest()));
        ImageStore store = ImageStore.open(temp.resolve("store"));
        try (BlobWriter writer = store.openBlob(layer.digest())) { // what a killed pull leaves
            writer.stream().write(Arrays.copyOf(bytes, bytes.length / 2));
        }
        proxy.ignoreRanges();

        ImagePuller.Fetched fetched = puller().fetch(viaProxy("norange/app:v1"), store, ImagePuller.Progress.NONE);

        assertThat(fetched.layers()).allMatch(store::hasBlob);
        assertThat(Files.readAllBytes(store.blob(layer.digest()))).isEqualTo(bytes);
        assertThat(proxy.requests()).filteredOn(s -> s.path().endsWith(layer.digest()))
                .extracting(TestProxy.Seen::range).containsExactly("bytes=" + bytes.length / 2 + "-");
    }

    @Test
    void aStalledBlobTimesOutAsUnreachable() throws Exception {
        ImageFormats.Descriptor layer = push("stall/app", 256 << 10).layers().getFirst();
        proxy.stallOnce(path -> path.endsWith("/blobs/" + layer.digest()), 1000);
        ImagePuller impatient = new ImagePuller(new ImagePuller.Options(Set.of(), Long.MAX_VALUE,
                Duration.ofMillis(500), RegistryCredentials.none()));

        assertFails(ImageException.Failure.UNREACHABLE, "no data for 0.5 s", () -> impatient.fetch(
                viaProxy("stall/app:v1"), ImageStore.open(temp.resolve("store")), ImagePuller.Progress.NONE));
    }

    @Test
    void anAlteredManifestIsADigestMismatchByDigestAndByTag() throws Exception {
        ImageFormats.Manifest manifest = push("altered/app", 1024);
        String digest = registry.manifestDigest("altered/app", "v1");
        proxy.alter(path -> path.contains("/manifests/"),
                body -> (new String(body, StandardCharsets.UTF_8) + " ").getBytes(StandardCharsets.UTF_8));
        ImageStore store = ImageStore.open(temp.resolve("store"));

        for (String reference : List.of("altered/app@" + digest, "altered/app:v1")) {
            assertFails(ImageException.Failure.DIGEST_MISMATCH, "should hash to " + digest,
                    () -> puller().fetch(viaProxy(reference), store, ImagePuller.Progress.NONE));
        }
        assertThat(store.hasBlob(manifest.config().digest())).isFalse();
        assertThat(proxy.requests()).noneMatch(TestProxy.Seen::isBlob);
        StoreFixtures.assertNothingVisible(store);
    }

    @Test
    void aBlobCorruptedOnTheRegistrysDiskIsADigestMismatchAndNotKept() throws Exception {
        ImageFormats.Descriptor layer = push("corrupt/app", 64 << 10).layers().getFirst();
        Path file = registry.blobFile(layer.digest());
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 1;
        Files.write(file, bytes);
        Path dir = temp.resolve("store");
        ImageStore store = ImageStore.open(dir);

        assertFails(ImageException.Failure.DIGEST_MISMATCH, layer.digest(),
                () -> puller().fetch(registry.ref("corrupt/app:v1"), store, ImagePuller.Progress.NONE));
        assertThat(store.hasBlob(layer.digest())).isFalse();
        assertThat(StoreFixtures.entries(dir.resolve("partial"))).isEmpty();
        StoreFixtures.assertNothingVisible(store);
    }

    @Test
    void aBlobLongerThanItsManifestSaysIsRefusedUnwritten() throws Exception {
        ImageFormats.Descriptor layer = push("long/app", 4096).layers().getFirst();
        proxy.alter(path -> path.endsWith("/blobs/" + layer.digest()), body -> Arrays.copyOf(body, body.length + 10));
        ImageStore store = ImageStore.open(temp.resolve("store"));

        assertFails(ImageException.Failure.DIGEST_MISMATCH, "says is " + layer.size() + " bytes",
                () -> puller().fetch(viaProxy("long/app:v1"), store, ImagePuller.Progress.NONE));
        assertThat(store.hasBlob(layer.digest())).isFalse();
        assertThat(Files.size(store.dir().resolve("partial/sha256-" + layer.digest().substring(7)))).isZero();
    }
}
