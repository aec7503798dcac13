package dev.crucible.image.registry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.image.spec.ImageRef;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Where a pull speaks plain HTTP (never to a name that only looks local) and how challenges read. */
class RegistryClientTest {
    @ParameterizedTest
    @CsvSource({
        "127.0.0.1:5000/app, http://127.0.0.1:5000/v2/app/",
        "127.1.2.3/team/app, http://127.1.2.3/v2/team/app/",
        "localhost:5000/app, http://localhost:5000/v2/app/",
        "[::1]:5000/app, http://[::1]:5000/v2/app/",
        "127.0.0.1.nip.io:5000/app, https://127.0.0.1.nip.io:5000/v2/app/",
        "127.evil.example/app, https://127.evil.example/v2/app/",
        "localhost.example.com/app, https://localhost.example.com/v2/app/",
        "ghcr.io/org/app, https://ghcr.io/v2/org/app/",
        "python, https://registry-1.docker.io/v2/library/python/",
        "registry.internal:5000/app, https://registry.internal:5000/v2/app/"
    })
    void speaksHttpsExceptToLoopbackAddresses(String reference, String base) throws Exception {
        assertThat(RegistryClient.base(ImageRef.parse(reference), Set.of())).hasToString(base);
    }

    @Test
    void speaksPlainHttpToARegistryListedAsInsecure() throws Exception {
        ImagePuller.Options options = new ImagePuller.Options(Set.of("Registry.Internal:5000", "http://mirror.lan/"),
                Long.MAX_VALUE, Duration.ofSeconds(1), null);
        assertThat(RegistryClient.base(ImageRef.parse("registry.internal:5000/app"), options.insecureRegistries()))
                .hasToString("http://registry.internal:5000/v2/app/");
        assertThat(RegistryClient.base(ImageRef.parse("mirror.lan/app"), options.insecureRegistries()))
                .hasToString("http://mirror.lan/v2/app/");
        assertThat(RegistryClient.base(ImageRef.parse("registry.internal:5001/app"), options.insecureRegistries()))
                .hasToString("https://registry.internal:5001/v2/app/");
    }

    @Test
    void readsBearerAndBasicChallengesWithQuotedCommas() {
        List<AuthChallenge> challenges = AuthChallenge.parseAll(List.of(
                "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
                        + "scope=\"repository:library/python:pull,push\",error=\"insufficient_scope\"",
                "Basic realm=\"Registry \\\"Realm\\\"\", Negotiate"));

        assertThat(challenges).containsExactly(
                new AuthChallenge("bearer", Map.of("realm", "https://auth.docker.io/token", "service",
                        "registry.docker.io", "scope", "repository:library/python:pull,push", "error",
                        "insufficient_scope")),
                new AuthChallenge("basic", Map.of("realm", "Registry \"Realm\"")),
                new AuthChallenge("negotiate", Map.of()));
    }

    @Test
    void readsUnquotedParametersAndIgnoresGarbage() {
        assertThat(AuthChallenge.parseAll(List.of("BEARER Realm=http://127.0.0.1:1/token , Service=svc")))
                .containsExactly(new AuthChallenge("bearer", Map.of("realm", "http://127.0.0.1:1/token",
                        "service", "svc")));
        assertThat(AuthChallenge.parseAll(List.of("", "=\"x\""))).isEmpty();
    }
}
