package dev.crucible.image.registry;

import static dev.crucible.image.registry.PullFixtures.layer;
import static dev.crucible.image.registry.PullFixtures.layout;
import static dev.crucible.image.registry.PullFixtures.puller;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Pulls from a real registry (Debian's docker-registry): formats, platforms from an index, refusals. */
class ImagePullerTest {
    @TempDir
    static Path shared;
    static TestRegistry registry;

    @TempDir
    Path temp;

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

    private ImageStore store() throws IOException {
        return ImageStore.open(temp.resolve("store"));
    }

    /** An image in the registry: its reference, manifest digest, and one file its root must hold. */
    private record Pushed(ImageRef ref, String digest, String file, String content) {}

    private Pushed pushOci() throws Exception {
        String digest = registry.pushLayout(layout(temp, "v1", layer("hello.txt", "hi")), "v1", "oci/app");
        return new Pushed(registry.ref("oci/app:v1"), digest, "hello.txt", "hi");
    }

    private Pushed pushDocker() throws Exception {
        String digest = registry.pushLayout(layout(temp, "v1", layer("docker.txt", "schema 2")), "v1", "docker/app",
                "--format", "v2s2");
        return new Pushed(registry.ref("docker/app:v1"), digest, "docker.txt", "schema 2");
    }

    private Pushed pushZstd() throws Exception {
        String salt = UUID.randomUUID().toString(); // skopeo's blob cache would reuse a gzip copy of a layer it saw
        String digest = registry.pushLayout(layout(temp, "v1", layer("zstd.txt", salt)), "v1", "zstd/app",
                "--format", "oci", "--dest-compress", "--dest-compress-format", "zstd");
        return new Pushed(registry.ref("zstd/app:v1"), digest, "zstd.txt", salt);
    }

    private Pushed pushPlain() throws Exception {
        String digest = registry.pushImage("plain/app", "v1", layer("a.txt", "lower"), layer("b.txt", "upper"));
        return new Pushed(registry.ref("plain/app:v1"), digest, "b.txt", "upper");
    }

    /** An index of an image for another platform and one for this host's, tagged v1. */
    private Pushed pushIndex() throws Exception {
        ImageFormats.Platform host = ImageFormats.Platform.host();
        String other = registry.pushImage("multi/app", "other", layer("which", "other"));
        String mine = registry.pushImage("multi/app", "mine", layer("which", "mine"));
        registry.putManifest("multi/app", "v1", ImageFormats.OCI_INDEX, index("multi/app", ImageFormats.OCI_INDEX,
                List.of(Map.entry(other, foreign(host)), Map.entry(mine, host))));
        return new Pushed(registry.ref("multi/app:v1"), mine, "which", "mine");
    }

    @Test
    void pullsAnOciImageByTagThenByDigestWithoutFetchingAgain() throws Exception {
        Pushed oci = pushOci();
        ImageStore store = store();
        PullFixtures.Recorder first = new PullFixtures.Recorder();

        ImagePuller.Fetched fetched = puller().fetch(oci.ref(), store, first);

        assertThat(fetched.digest()).isEqualTo(oci.digest()).isEqualTo(Digests.of(fetched.manifest()));
        ImageFormats.Manifest manifest = ImageFormats.manifest(fetched.manifest(), oci.digest());
        assertThat(manifest.config().mediaType()).isEqualTo(ImageFormats.OCI_CONFIG); // umoci writes no mediaType
        assertThat(manifest.layers()).extracting(ImageFormats.Descriptor::mediaType)
                .containsExactly(ImageFormats.OCI_LAYER_GZIP);
        assertThat(fetched.layers()).allMatch(store::hasBlob).hasSize(1);
        assertThat(Digests.of(fetched.config())).isEqualTo(manifest.config().digest());
        assertThat(first.done()).allMatch(e -> e.endsWith(" true")).hasSize(2);

        PullFixtures.Recorder second = new PullFixtures.Recorder();
        ImagePuller.Fetched again = puller().fetch(registry.ref("oci/app@" + oci.digest()), store, second);
        assertThat(again.digest()).isEqualTo(oci.digest());
        assertThat(second.done()).allMatch(e -> e.endsWith(" false")).hasSize(2);
    }

    @Test
    void pullsADockerSchema2Image() throws Exception {
        Pushed docker = pushDocker();
        ImagePuller.Fetched fetched = puller().fetch(docker.ref(), store(), ImagePuller.Progress.NONE);

        assertThat(fetched.digest()).isEqualTo(docker.digest());
        ImageFormats.Manifest manifest = ImageFormats.manifest(fetched.manifest(), docker.digest());
        assertThat(manifest.mediaType()).isEqualTo(ImageFormats.DOCKER_MANIFEST);
        assertThat(manifest.layers()).extracting(ImageFormats.Descriptor::mediaType)
                .containsExactly(ImageFormats.DOCKER_LAYER_GZIP);
    }

    @Test
    void pullsZstdLayersMadeBySkopeo() throws Exception {
        Pushed zstd = pushZstd();
        ImagePuller.Fetched fetched = puller().fetch(zstd.ref(), store(), ImagePuller.Progress.NONE);

        assertThat(ImageFormats.manifest(fetched.manifest(), zstd.digest()).layers())
                .extracting(ImageFormats.Descriptor::mediaType).containsExactly(ImageFormats.OCI_LAYER_ZSTD);
    }

    @Test
    void pullsUncompressedLayersPushedThroughTheHttpApi() throws Exception {
        Pushed plain = pushPlain();
        ImagePuller.Fetched fetched = puller().fetch(plain.ref(), store(), ImagePuller.Progress.NONE);

        assertThat(fetched.digest()).isEqualTo(plain.digest());
        assertThat(ImageFormats.manifest(fetched.manifest(), plain.digest()).layers())
                .extracting(ImageFormats.Descriptor::mediaType).containsOnly(ImageFormats.OCI_LAYER_TAR).hasSize(2);
    }

    @Test
    void choosesTheHostPlatformFromAnIndexByTagAndByItsDigest() throws Exception {
        Pushed index = pushIndex();
        String indexDigest = registry.manifestDigest("multi/app", "v1");
        ImageStore store = store();

        ImagePuller.Fetched byTag = puller().fetch(index.ref(), store, ImagePuller.Progress.NONE);
        ImagePuller.Fetched byDigest = puller().fetch(registry.ref("multi/app@" + indexDigest), store,
                ImagePuller.Progress.NONE);

        assertThat(byTag.digest()).isEqualTo(index.digest());
        assertThat(byDigest.digest()).isEqualTo(index.digest());
        String other = registry.manifestDigest("multi/app", "other");
        String otherLayer = ImageFormats.manifest(registry.manifest("multi/app", other), other).layers()
                .getFirst().digest();
        assertThat(store.hasBlob(otherLayer)).isFalse();
    }

    @Test
    void pullsEachKindIntoARootHoldingItsFiles() throws Exception {
        ImageStore store = store();
        for (Pushed pushed : List.of(pushOci(), pushDocker(), pushZstd(), pushPlain(), pushIndex())) {
            Image image = PullFixtures.pullToRoot(puller(), pushed.ref(), store);
            assertThat(image.digest()).isEqualTo(pushed.digest());
            assertThat(image.name()).isEqualTo(pushed.ref().canonical());
            PullFixtures.assertFile(image, pushed.file(), pushed.content());
        }
        assertThat(store.list()).hasSize(5);
    }

    @Test
    void refusesAnIndexWithoutTheHostPlatformNamingWhatItHas() throws Exception {
        String a = registry.pushImage("foreign/app", "a", layer("a", "a"));
        String b = registry.pushImage("foreign/app", "b", layer("b", "b"));
        ImageFormats.Platform s390x = new ImageFormats.Platform("linux", "s390x", null);
        ImageFormats.Platform ppc = new ImageFormats.Platform("linux", "ppc64le", null);
        registry.putManifest("foreign/app", "v1", ImageFormats.DOCKER_LIST,
                index("foreign/app", ImageFormats.DOCKER_LIST, List.of(Map.entry(a, s390x), Map.entry(b, ppc))));
        ImageStore store = store();

        assertThatThrownBy(() -> puller().fetch(registry.ref("foreign/app:v1"), store, ImagePuller.Progress.NONE))
                .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                        .isEqualTo(ImageException.Failure.UNSUPPORTED))
                .hasMessageContaining("linux/s390x").hasMessageContaining("linux/ppc64le")
                .hasMessageContaining("no image for " + ImageFormats.Platform.host());
        StoreFixtures.assertNothingVisible(store);
    }

    @Test
    void anUnknownTagOrRepositoryIsNotFound() throws Exception {
        registry.pushImage("known/app", "v1", layer("x", "x"));
        for (String missing : List.of("known/app:v2", "unknown/app:v1")) {
            assertThatThrownBy(() -> puller().fetch(registry.ref(missing), store(), ImagePuller.Progress.NONE))
                    .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                            .isEqualTo(ImageException.Failure.NOT_FOUND))
                    .hasMessageContaining("no such image: " + registry.host() + "/" + missing);
        }
    }

    @Test
    void aStoppedRegistryIsUnreachable() throws Exception {
        TestRegistry stopped = TestRegistry.start(temp.resolve("stopped"));
        try (stopped) {
            stopped.pushImage("gone/app", "v1", layer("x", "x"));
            stopped.stop();
            assertThatThrownBy(() -> puller().fetch(stopped.ref("gone/app:v1"), store(), ImagePuller.Progress.NONE))
                    .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                            .isEqualTo(ImageException.Failure.UNREACHABLE))
                    .hasMessageStartingWith("registry " + stopped.host() + " unreachable: ");
        }
    }

    @Test
    void tooLargeIsRefusedBeforeAnyBlobIsFetched() throws Exception {
        registry.pushImage("big/app", "v1", new byte[64 << 10]);
        try (TestProxy proxy = TestProxy.start(registry.host())) {
            ImageStore store = store();
            assertThatThrownBy(() -> puller(Set.of(), 32 << 10, RegistryCredentials.none())
                    .fetch(ImageRef.parse(proxy.host() + "/big/app:v1"), store, ImagePuller.Progress.NONE))
                    .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                            .isEqualTo(ImageException.Failure.TOO_LARGE))
                    .hasMessageContaining("over the cap");
            assertThat(proxy.requests()).noneMatch(TestProxy.Seen::isBlob).isNotEmpty();
            StoreFixtures.assertNothingVisible(store);
        }
    }

    @Test
    void aNonLoopbackNameIsSpokenToOverHttpsUnlessListedAsInsecure() throws Exception {
        Optional<String> alias = loopbackAlias();
        Capability.LOOPBACK_ALIAS.require(alias.isPresent() ? null
                : "no host name that is not 'localhost' resolves to 127.0.0.1 here (/etc/hosts)");
        registry.pushImage("alias/app", "v1", layer("x", "x"));
        String name = alias.get() + ":" + registry.port();
        ImageRef ref = ImageRef.parse(name + "/alias/app:v1");

        assertThatThrownBy(() -> puller().fetch(ref, store(), ImagePuller.Progress.NONE))
                .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                        .isEqualTo(ImageException.Failure.UNREACHABLE))
                .hasMessageContaining("TLS").hasMessageContaining("insecure registry (" + name + ")");
        ImagePuller insecure = puller(Set.of(name), Long.MAX_VALUE, RegistryCredentials.none());
        assertThat(insecure.fetch(ref, store(), ImagePuller.Progress.NONE).layers()).hasSize(1);
    }

    /** A name from /etc/hosts (not localhost, not an IP) that resolves to 127.0.0.1, if this machine has one. */
    private static Optional<String> loopbackAlias() {
        for (String name : List.of("localhost.localdomain", "vm", "runsc", "ip6-localhost")) {
            try {
                if (InetAddress.getByName(name).getHostAddress().equals("127.0.0.1")) {
                    return Optional.of(name);
                }
            } catch (IOException e) {
                // not this one
            }
        }
        return Optional.empty();
    }

    private static ImageFormats.Platform foreign(ImageFormats.Platform host) {
        return new ImageFormats.Platform("linux", host.architecture().equals("s390x") ? "ppc64le" : "s390x", null);
    }

    /** An index of manifests of {@code repository} (digest → platform). */
    private static byte[] index(String repository, String mediaType,
            List<Map.Entry<String, ImageFormats.Platform>> manifests) throws Exception {
        List<ImageFormats.Descriptor> entries = new ArrayList<>();
        for (Map.Entry<String, ImageFormats.Platform> m : manifests) {
            entries.add(new ImageFormats.Descriptor(ImageFormats.OCI_MANIFEST, m.getKey(),
                    registry.manifest(repository, m.getKey()).length, null, m.getValue()));
        }
        return ImageFormats.JSON.writeValueAsBytes(Map.of("schemaVersion", 2, "mediaType", mediaType,
                "manifests", entries));
    }
}
