package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.image.Images;
import dev.crucible.image.registry.ImagePuller;
import dev.crucible.image.registry.RegistryCredentials;
import dev.crucible.image.registry.TestProxy;
import dev.crucible.image.registry.TestRegistry;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.TestImages;
import dev.crucible.sandbox.SandboxConfig;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 25, a registry that stops answering in the middle of a blob, on a server that may pull ({@code serve
 * --allow-pull}): a request that needs the image is answered within its deadline whatever the registry does, with an
 * error naming the part; the pull goes on (or gives up at its read timeout) on its own thread; no half image is ever
 * visible; and once the registry answers again the next request pulls, resuming, and runs.
 */
class ImagePullStallTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    /** The puller's read timeout: a pull gives up after this long without a byte (serve's is 30 s). */
    static final Duration READ_TIMEOUT = Duration.ofSeconds(12);
    static final long TIMEOUT_MS = 3000;
    /** How long a client may wait for an answer: the request's timeout, and a margin for a busy machine. */
    static final Duration BOUND = Duration.ofMillis(TIMEOUT_MS).plusSeconds(5);

    @TempDir
    static Path shared;
    static TestRegistry registry;
    static String layer;

    @TempDir
    Path temp;
    TestProxy proxy;
    ImageStore store;
    Crucible engine;
    CrucibleServer server;
    Http http;

    @BeforeAll
    static void pushTheDebianImage() throws Exception {
        TestRegistry.requireInstalled();
        registry = TestRegistry.start(shared.resolve("registry"));
        byte[] root = Files.readAllBytes(TestImages.debianRoot());
        layer = "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(root));
        registry.pushImage("crucible/debian-python", "1", root);
    }

    @AfterAll
    static void stopRegistry() throws Exception {
        if (registry != null) {
            registry.close();
        }
    }

    @BeforeEach
    void startServer() throws Exception {
        proxy = TestProxy.start(registry.host());
        Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
        store = ImageStore.open(temp.resolve("images"));
        Images images = Images.of(store, new Images.PullPolicy(Set.of(proxy.host()), new ImagePuller.Options(Set.of(),
                Long.MAX_VALUE, READ_TIMEOUT, RegistryCredentials.none())));
        engine = Crucible.start(SandboxConfig.defaults().withSlots(2).withZygote(false), null, images);
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of()).withPool(Map.of()), engine);
        http = Http.to(server, null);
    }

    @AfterEach
    void stopServer() throws Exception {
        if (server != null) {
            server.close();
        }
        if (engine != null) {
            engine.close();
        }
        proxy.close();
        for (var image : store.list()) { // the store's own removal: a root's links are no business of the temp dir's
            store.remove(image.name());
        }
        store.prune();
    }

    private String image() {
        return proxy.host() + "/crucible/debian-python:1";
    }

    /** POST /v1/execute in the image, answered within {@link #BOUND} as measured here. */
    private HttpResponse<String> execute(long timeoutMs) throws Exception {
        String body = JSON.writeValueAsString(Map.of("language", "python", "image", image(),
                "code", "import tabulate; print('ran in the image')", "limits", Map.of("timeout_ms", timeoutMs)));
        long start = System.nanoTime();
        HttpResponse<String> r = http.postJson("/v1/execute", body);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("answered within its deadline: " + r.body())
                .isLessThan(Duration.ofMillis(timeoutMs).plus(BOUND.minusMillis(TIMEOUT_MS)));
        return r;
    }

    private static String code(HttpResponse<String> r) {
        return JSON.readTree(r.body()).at("/error/code").asString();
    }

    /** Asks again while the answer is that the image is still being pulled; each ask waits on the server, not here. */
    private HttpResponse<String> untilPulled() throws Exception {
        HttpResponse<String> r = execute(TIMEOUT_MS);
        for (int asked = 1; r.statusCode() == 503 && code(r).equals("image_pulling") && asked < 40; asked++) {
            assertThat(r.headers().firstValue("Retry-After")).as("a 503 says when to ask again").isPresent();
            r = execute(TIMEOUT_MS);
        }
        return r;
    }

    private static void assertRan(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode ran = JSON.readTree(r.body());
        assertThat(ran.get("status").asString()).as(r.body()).isEqualTo("ok");
        assertThat(ran.get("stdout").asString()).isEqualTo("ran in the image\n");
    }

    private static List<Thread> pullThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("crucible-image-pull"))
                .filter(Thread::isAlive).toList();
    }

    private static void assertPullThreadsEnd(Duration within) throws InterruptedException {
        for (Thread pull : pullThreads()) {
            assertThat(pull.join(within)).as("the pull thread ends").isTrue();
        }
    }

    /** No image, root or staging dir and no temp file: only verified blobs and partial downloads to resume. */
    private void assertNoHalfImage() throws Exception {
        assertThat(store.list()).as("images").isEmpty();
        try (Stream<Path> roots = Files.list(store.dir().resolve("roots"));
                Stream<Path> staging = Files.list(store.dir().resolve("staging"));
                Stream<Path> all = Files.walk(store.dir())) {
            assertThat(roots.toList()).as("unpacked roots").isEmpty();
            assertThat(staging.toList()).as("staging").isEmpty();
            assertThat(all.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList()).as("temp files").isEmpty();
        }
    }

    @Test
    void aRegistryStalledMidBlobGets504WithinTheDeadlineAndTheNextPullResumesAndRuns() throws Exception {
        proxy.stallOnce(path -> path.endsWith("/blobs/" + layer), 4 << 20);

        HttpResponse<String> stalled = execute(TIMEOUT_MS);
        assertThat(stalled.statusCode()).as(stalled.body()).isEqualTo(504);
        assertThat(code(stalled)).isEqualTo("image_pull_timeout");
        assertThat(JSON.readTree(stalled.body()).at("/error/message").asString()).contains(proxy.host())
                .contains(layer);
        HttpResponse<String> meanwhile = execute(TIMEOUT_MS); // joins the stalled pull, and is answered in time too
        assertThat(meanwhile.statusCode()).as(meanwhile.body()).isEqualTo(504);
        assertNoHalfImage();

        // the stalled pull gives up at its read timeout: its thread ends, what arrived is kept to resume from
        assertPullThreadsEnd(READ_TIMEOUT.plusSeconds(20));
        assertNoHalfImage();
        try (Stream<Path> partial = Files.list(store.dir().resolve("partial"))) {
            assertThat(partial.toList()).as("the layer's partial download").hasSize(1);
        }

        // the registry answers again: the next requests pull (from where it stopped), then run
        assertRan(untilPulled());
        assertThat(proxy.requests()).filteredOn(s -> s.path().endsWith("/blobs/" + layer))
                .extracting(TestProxy.Seen::range).as("the second pull resumed").last().asString()
                .startsWith("bytes=");
        assertRan(execute(TIMEOUT_MS));
    }

    @Test
    void aPullStillProgressingAtTheDeadlineGets503WithRetryAfterAndFinishesInTheBackground() throws Exception {
        proxy.throttleBlobs(16L << 20); // the layer takes about 10 s

        HttpResponse<String> first = execute(2000);
        assertThat(first.statusCode()).as(first.body()).isEqualTo(503);
        assertThat(code(first)).isEqualTo("image_pulling");
        assertThat(first.headers().firstValue("Retry-After")).isPresent();

        assertRan(untilPulled());
        assertThat(proxy.requests()).filteredOn(s -> s.path().endsWith("/blobs/" + layer))
                .as("one pull served every request").hasSize(1);
        assertPullThreadsEnd(Duration.ofSeconds(10));
    }
}
