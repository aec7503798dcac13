package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The environment is read by the CLI through fromEnvironment, never by defaults(). */
class ServerConfigTest {
    @Test
    void defaultsAreTheSameWhateverTheEnvironmentAndFromEnvironmentReadsIt() {
        ServerConfig defaults = ServerConfig.defaults();
        assertThat(defaults.tokens()).isEmpty();
        assertThat(ServerConfig.fromEnvironment(Map.of())).isEqualTo(defaults);
        ServerConfig set = ServerConfig.fromEnvironment(Map.of("CRUCIBLE_TOKENS", "a, b", "CRUCIBLE_POOL",
                "python=4,javascript=0", "CRUCIBLE_DATA_DIR", "/srv/crucible"));
        assertThat(set.tokens()).isEqualTo(Set.of("a", "b"));
        assertThat(set.pool()).containsEntry("python", 4).containsEntry("javascript", 0);
        assertThat(set.sessions().dataDir()).isEqualTo(Path.of("/srv/crucible"));
        assertThat(set.maxConcurrent()).isEqualTo(defaults.maxConcurrent());
    }

    @Test
    void allowedOriginsAreReadStrictlyAndKeptInOneSpelling() {
        assertThat(ServerConfig.defaults().allowedOrigins()).isEmpty();
        assertThat(ServerConfig.fromEnvironment(Map.of("CRUCIBLE_ALLOWED_ORIGINS",
                "https://App.Example.com, http://localhost:3000,,http://[::1]:8080")).allowedOrigins())
                .containsExactly("https://app.example.com:443", "http://localhost:3000", "http://[::1]:8080");
        for (String bad : List.of("app.example.com", "https://app.example.com/", "https://app.example.com/path", "*",
                "null", "ftp://files.example.com", "https://", "https://user@app.example.com",
                "http://localhost:99999")) {
            assertThatThrownBy(() -> ServerConfig.allowedOriginsFrom("https://ok.example.com," + bad)).as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + bad + "'").hasMessageContaining("http(s)://HOST[:PORT]")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
            assertThatThrownBy(() -> ServerConfig.fromEnvironment(Map.of("CRUCIBLE_ALLOWED_ORIGINS", bad))).as(bad)
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aPreviewListenerIsReadStrictlyAndRefusedOffLoopbackWithoutAToken() {
        ServerConfig none = ServerConfig.defaults();
        assertThat(none.previewListen()).isNull();
        assertThat(none.previewAddress()).isNull();
        assertThat(none.previewDomain()).isEqualTo("localhost");
        ServerConfig set = ServerConfig.fromEnvironment(Map.of("CRUCIBLE_PREVIEW_LISTEN", "127.0.0.1:8081",
                "CRUCIBLE_PREVIEW_DOMAIN", "Preview.Example.com"));
        assertThat(set.previewAddress().getHostString()).isEqualTo("127.0.0.1");
        assertThat(set.previewAddress().getPort()).isEqualTo(8081);
        assertThat(set.previewDomain()).isEqualTo("preview.example.com");
        assertThat(none.withPreviewListen("[::1]:0").previewAddress().getHostString()).isEqualTo("::1");
        assertThat(set.openWithoutToken()).isNull();
        for (String bad : List.of("8081", "127.0.0.1", "127.0.0.1:99999", "::1:8081", "host:port", " :80")) {
            assertThatThrownBy(() -> none.withPreviewListen(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + bad + "'").hasMessageContaining("HOST:PORT");
        }
        for (String bad : List.of("", "*.example.com", "example.com.", "-a.example.com", "a_b.example.com",
                "http://example.com")) {
            assertThatThrownBy(() -> none.withPreviewDomain(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + bad + "'").hasMessageContaining("DNS name");
        }
        assertThat(none.withPreviewListen("0.0.0.0:8081").openWithoutToken())
                .isEqualTo("refusing to listen on 0.0.0.0:8081 without a token: set CRUCIBLE_TOKENS (comma-separated"
                        + " bearer tokens) or bind 127.0.0.1");
        assertThat(none.withPreviewListen("0.0.0.0:8081").withTokens(Set.of("t")).openWithoutToken()).isNull();
        assertThat(none.withHost("0.0.0.0").openWithoutToken()).contains("listen on 0.0.0.0 without a token");
    }
}
