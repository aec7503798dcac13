package dev.crucible.image.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.image.spec.ImageRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Logins from CRUCIBLE_REGISTRY_AUTH, $DOCKER_CONFIG or ~/.docker/config.json, in Docker's config.json shape. */
class RegistryCredentialsTest {
    @TempDir
    Path temp;

    private static String auth(String userAndPassword) {
        return Base64.getEncoder().encodeToString(userAndPassword.getBytes(StandardCharsets.UTF_8));
    }

    private static RegistryCredentials.Login login(String user, String password) {
        return new RegistryCredentials.Login(user, password);
    }

    @Test
    void readsInlineJsonWithAuthOrUsernameAndPassword() {
        RegistryCredentials credentials = RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH",
                "  {\"auths\": {\"ghcr.io\": {\"auth\": \"" + auth("octo:tok:en") + "\"},"
                        + " \"127.0.0.1:5000\": {\"username\": \"me\", \"password\": \"pw\"}}}",
                "HOME", temp.toString()));

        assertThat(credentials.forRegistry("ghcr.io")).contains(login("octo", "tok:en"));
        assertThat(credentials.forRegistry("127.0.0.1:5000")).contains(login("me", "pw"));
        assertThat(credentials.forRegistry("GHCR.io")).contains(login("octo", "tok:en"));
        assertThat(credentials.forRegistry("docker.io")).isEmpty();
    }

    @Test
    void readsTheFileCrucibleRegistryAuthNames() throws Exception {
        Path file = Files.writeString(temp.resolve("auth.json"), "{\"auths\": {\"https://index.docker.io/v1/\":"
                + " {\"auth\": \"" + auth("hub:secret") + "\"}}}");
        RegistryCredentials credentials = RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH",
                file.toString()));
        assertThat(credentials.forRegistry(ImageRef.DOCKER_HUB)).contains(login("hub", "secret"));
    }

    @Test
    void fallsBackToDockerConfigThenHome() throws Exception {
        Path dockerConfig = Files.createDirectories(temp.resolve("docker-config"));
        Files.writeString(dockerConfig.resolve("config.json"), "{\"auths\": {\"a.example\": {\"auth\": \""
                + auth("a:1") + "\"}}}");
        Path home = Files.createDirectories(temp.resolve("home/.docker")).getParent();
        Files.writeString(home.resolve(".docker/config.json"), "{\"auths\": {\"b.example\": {\"auth\": \""
                + auth("b:2") + "\"}}, \"credsStore\": \"desktop\"}");

        RegistryCredentials fromDockerConfig = RegistryCredentials.fromEnvironment(Map.of(
                "DOCKER_CONFIG", dockerConfig.toString(), "HOME", home.toString()));
        RegistryCredentials fromHome = RegistryCredentials.fromEnvironment(Map.of("HOME", home.toString()));

        assertThat(fromDockerConfig.forRegistry("a.example")).contains(login("a", "1"));
        assertThat(fromDockerConfig.forRegistry("b.example")).isEmpty();
        assertThat(fromHome.forRegistry("b.example")).contains(login("b", "2"));
    }

    @Test
    void noFileMeansNoLogins() {
        assertThat(RegistryCredentials.fromEnvironment(Map.of("HOME", temp.toString())).forRegistry("docker.io"))
                .isEmpty();
        assertThat(RegistryCredentials.fromEnvironment(Map.of()).forRegistry("docker.io")).isEmpty();
        assertThat(RegistryCredentials.fromEnvironment(Map.of("DOCKER_CONFIG", temp.resolve("none").toString()))
                .forRegistry("docker.io")).isEmpty();
    }

    @Test
    void ignoresTheEmptyEntriesOfCredentialHelpers() {
        RegistryCredentials credentials = RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH",
                "{\"auths\": {\"https://index.docker.io/v1/\": {}}, \"credsStore\": \"osxkeychain\","
                        + " \"credHelpers\": {\"gcr.io\": \"gcloud\"}}"));
        assertThat(credentials.forRegistry("docker.io")).isEmpty();
        assertThat(credentials.forRegistry("gcr.io")).isEmpty();
    }

    @ParameterizedTest
    @CsvSource({
        "https://index.docker.io/v1/, docker.io",
        "index.docker.io, docker.io",
        "registry-1.docker.io, docker.io",
        "https://ghcr.io/v2/, ghcr.io",
        "http://127.0.0.1:5000, 127.0.0.1:5000",
        "Quay.IO, quay.io",
        "localhost:5000/v2/, localhost:5000"
    })
    void normalisesConfigKeysToRegistries(String key, String registry) {
        assertThat(RegistryCredentials.registryOf(key)).isEqualTo(registry);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "{\"auths\": ",
        "{\"auths\": {\"ghcr.io\": [1, 2]}}",
        "{}  {",
        "{\"auths\": []}",
        "{\"auths\": {\"ghcr.io\": \"x\"}}",
        "{\"auths\": {\"ghcr.io\": {\"auth\": \"%%%\"}}}",
        "{\"auths\": {\"ghcr.io\": {\"auth\": \"bm9jb2xvbg==\"}}}",
        "{\"auths\": {\"ghcr.io\": {\"username\": \"me\"}}}",
        "{\"auths\": {\"ghcr.io\": {\"auth\": 42}}}"
    })
    void malformedJsonIsOneClearLine(String json) {
        assertThatThrownBy(() -> RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH", json)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("CRUCIBLE_REGISTRY_AUTH")
                .hasMessageContaining("config.json")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test
    void aMissingOrMalformedFileIsOneClearLine() throws Exception {
        assertThatThrownBy(() -> RegistryCredentials.fromEnvironment(Map.of("CRUCIBLE_REGISTRY_AUTH",
                temp.resolve("missing.json").toString())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("CRUCIBLE_REGISTRY_AUTH names")
                .hasMessageContaining("missing.json");
        Path bad = Files.writeString(temp.resolve("config.json"), "not json");
        assertThatThrownBy(() -> RegistryCredentials.fromEnvironment(Map.of("DOCKER_CONFIG", temp.toString())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(bad.toString())
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test
    void aLoginDoesNotShowItsPassword() {
        assertThat(login("me", "hunter2").toString()).contains("me").doesNotContain("hunter2");
    }
}
