package dev.crucible.image.registry;

import static dev.crucible.image.registry.PullFixtures.layer;
import static dev.crucible.image.registry.PullFixtures.layout;
import static dev.crucible.image.registry.PullFixtures.puller;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.ImageStore;
import dev.crucible.image.store.StoreFixtures;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Pulls from a registry with token auth (Docker's protocol, RS256 JWTs from a token service of the test's own). */
class ImagePullerAuthTest {
    private static final String USER = "puller";
    private static final String PASSWORD = "s3cret-pass";

    @TempDir
    static Path shared;
    static TestRegistry registry;
    static String digest;

    @TempDir
    Path temp;

    @BeforeAll
    static void startRegistry() throws Exception {
        registry = TestRegistry.startWithTokenAuth(shared.resolve("registry"), USER, PASSWORD);
        digest = registry.pushLayout(layout(shared, "v1", layer("secret.txt", "for logins only")), "v1", "team/app");
    }

    @AfterAll
    static void stopRegistry() throws Exception {
        if (registry != null) {
            registry.close();
        }
    }

    private static RegistryCredentials login(String host, String password) {
        return RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH", "{\"auths\": {\"" + host
                + "\": {\"username\": \"" + USER + "\", \"password\": \"" + password + "\"}}}"));
    }

    @Test
    void anAnonymousPullIsUnauthorizedSayingHowToLogIn() throws Exception {
        ImageStore store = ImageStore.open(temp.resolve("store"));
        assertThatThrownBy(() -> puller().fetch(registry.ref("team/app:v1"), store, ImagePuller.Progress.NONE))
                .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                        .isEqualTo(ImageException.Failure.UNAUTHORIZED))
                .hasMessageContaining("docker login " + registry.host())
                .hasMessageContaining("CRUCIBLE_REGISTRY_AUTH");
        StoreFixtures.assertNothingVisible(store);
    }

    @Test
    void aWrongPasswordIsUnauthorized() {
        ImagePuller puller = puller(Set.of(), Long.MAX_VALUE, login(registry.host(), "wrong"));
        assertThatThrownBy(() -> puller.fetch(registry.ref("team/app:v1"), ImageStore.open(temp.resolve("store")),
                ImagePuller.Progress.NONE))
                .isInstanceOfSatisfying(ImageException.class, e -> assertThat(e.failure())
                        .isEqualTo(ImageException.Failure.UNAUTHORIZED))
                .hasMessageContaining("refused the login of " + USER);
    }

    @Test
    void aLoginPullsWithOneTokenForTheWholePull() throws Exception {
        int before = registry.tokenRequests().size();
        ImagePuller puller = puller(Set.of(), Long.MAX_VALUE, login(registry.host(), PASSWORD));
        ImageStore store = ImageStore.open(temp.resolve("store"));

        ImagePuller.Fetched fetched = puller.fetch(registry.ref("team/app:v1"), store, ImagePuller.Progress.NONE);

        assertThat(fetched.digest()).isEqualTo(digest);
        assertThat(fetched.layers()).allMatch(store::hasBlob);
        List<TestTokenServer.Request> requests = registry.tokenRequests();
        assertThat(requests.subList(before, requests.size()))
                .containsExactly(new TestTokenServer.Request(USER, List.of("repository:team/app:pull")));
        PullFixtures.assertFile(PullFixtures.pullToRoot(puller, registry.ref("team/app:v1"), store), "secret.txt",
                "for logins only");
    }

    @Test
    void aBlobRedirectedToAnotherHostIsFetchedWithoutTheAuthorizationHeader() throws Exception {
        try (TestProxy proxy = TestProxy.start(registry.host())) {
            proxy.redirectBlobsVia("localhost");
            String host = proxy.host();
            ImagePuller puller = puller(Set.of(), Long.MAX_VALUE, login(host, PASSWORD));

            ImagePuller.Fetched fetched = puller.fetch(ImageRef.parse(host + "/team/app:v1"),
                    ImageStore.open(temp.resolve("store")), ImagePuller.Progress.NONE);

            assertThat(fetched.digest()).isEqualTo(digest);
            List<TestProxy.Seen> seen = proxy.requests();
            assertThat(seen).filteredOn(s -> s.path().startsWith("/storage/")).hasSize(2)
                    .allMatch(s -> s.authorization() == null);
            assertThat(seen).filteredOn(TestProxy.Seen::isBlob).hasSize(2)
                    .allMatch(s -> s.authorization() != null && s.authorization().startsWith("Bearer "));
        }
    }
}
