package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
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
}
