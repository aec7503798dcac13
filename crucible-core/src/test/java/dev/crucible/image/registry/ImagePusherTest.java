package dev.crucible.image.registry;

import static dev.crucible.image.registry.PullFixtures.layer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.image.spec.Image;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pushes images of a store to a real registry (Debian's docker-registry, with token auth from the test's own token
 * service): the registry serves the image under the tag with its digest unchanged, another store pulls the same
 * image from it, blobs it has are not sent again, and a push without a login that may push is refused.
 */
class ImagePusherTest {
    private static final String USER = "pusher";
    private static final String PASSWORD = "push-pass";

    @TempDir
    static Path shared;
    static TestRegistry registry;

    @TempDir
    Path temp;

    @BeforeAll
    static void startRegistry() throws Exception {
        registry = TestRegistry.startWithTokenAuth(shared.resolve("registry"), USER, PASSWORD);
    }

    @AfterAll
    static void stopRegistry() throws Exception {
        if (registry != null) {
            registry.close();
        }
    }

    private static RegistryCredentials login(String password) {
        return RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH", "{\"auths\": {\"" + registry.host()
                + "\": {\"username\": \"" + USER + "\", \"password\": \"" + password + "\"}}}"));
    }

    private static ImagePusher pusher(RegistryCredentials credentials) {
        return new ImagePusher(new ImagePuller.Options(Set.of(), Long.MAX_VALUE, Duration.ofSeconds(30), credentials));
    }

    @Test
    void aPushedImageIsServedUnderItsTagWithItsDigestAndPullsIntoAnotherStore() throws Exception {
        String salt = UUID.randomUUID().toString();
        ImageStore store = ImageStore.open(temp.resolve("store"));
        Image image = StoreFixtures.commit(store, "local/app:1", salt, layer("base.txt", "lower " + salt),
                layer("app.txt", "upper " + salt));
        List<String> events = new ArrayList<>();

        ImagePusher.Pushed pushed = pusher(login(PASSWORD)).push(image, store, registry.ref("team/app:1"),
                (digest, size, sent) -> events.add(digest + " " + sent));

        assertThat(pushed.digest()).isEqualTo(image.digest());
        assertThat(pushed.blobsSent()).isEqualTo(3); // two layers and the config
        assertThat(events).hasSize(3).allMatch(e -> e.endsWith(" true"));
        assertThat(registry.manifestDigest("team/app", "1")).as("the registry serves the image's own digest")
                .isEqualTo(image.digest());
        List<TestTokenServer.Request> tokens = registry.tokenRequests();
        assertThat(tokens.getLast()).isEqualTo(new TestTokenServer.Request(USER,
                List.of("repository:team/app:pull,push")));

        ImagePuller.Options withLogin = new ImagePuller.Options(Set.of(), Long.MAX_VALUE, Duration.ofSeconds(30),
                login(PASSWORD));
        Image pulled = new ImagePuller(withLogin).pull(registry.ref("team/app:1"),
                ImageStore.open(temp.resolve("other")), ImagePuller.Progress.NONE);
        assertThat(pulled.digest()).isEqualTo(image.digest());
        PullFixtures.assertFile(pulled, "app.txt", "upper " + salt);

        ImagePusher.Pushed again = pusher(login(PASSWORD)).push(image, store, registry.ref("team/app:again"),
                ImagePusher.Progress.NONE);
        assertThat(again.blobsSent()).as("blobs the repository has are not sent again").isZero();
        assertThat(again.blobsPresent()).isEqualTo(3);
        assertThat(registry.manifestDigest("team/app", "again")).isEqualTo(image.digest());
    }

    @Test
    void aPushWithoutALoginOrWithAWrongOneIsUnauthorizedAndAPushToADigestIsRefused() throws Exception {
        ImageStore store = ImageStore.open(temp.resolve("store"));
        Image image = StoreFixtures.commit(store, "local/denied:1", UUID.randomUUID().toString(), layer("x", "y"));
        for (RegistryCredentials credentials : List.of(RegistryCredentials.none(), login("wrong"))) {
            assertThatThrownBy(() -> pusher(credentials).push(image, store, registry.ref("team/denied:1"),
                    ImagePusher.Progress.NONE))
                    .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                            .isEqualTo(ImageException.Failure.UNAUTHORIZED));
        }
        assertThatThrownBy(() -> pusher(login(PASSWORD)).push(image, store,
                registry.ref("team/denied@" + image.digest()), ImagePusher.Progress.NONE))
                .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                        .isEqualTo(ImageException.Failure.INVALID_REFERENCE));
    }
}
