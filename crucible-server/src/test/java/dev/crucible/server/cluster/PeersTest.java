package dev.crucible.server.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestDirs;
import dev.crucible.TestHost;
import dev.crucible.server.CrucibleServer;
import dev.crucible.server.ServerConfig;
import java.net.ServerSocket;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * Where the other replicas are. A name that is not known is asked of the peers, even under a second after the last
 * round (when a forward failed and the router forgot where its holder was, or a round at start found no one): the
 * asking waits for the next round rather than give up, so a session that lives is forwarded, never "lost". A real
 * replica on loopback.
 */
class PeersTest {
    @Test
    void aReplicaForgottenAMomentAfterARoundIsAskedForAgainNotLost() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        String url = "http://127.0.0.1:" + port;
        ServerConfig config = ServerConfig.defaults().withDataDir(TestDirs.create("crucible-peers-"));
        config = config.withSessions(config.sessions().withSpares(0)).withPool(Map.of()).withTokens(Set.of())
                .withPort(port).withCluster(new ServerConfig.Cluster("a", List.of(url)));
        try (CrucibleServer a = CrucibleServer.start(config, TestHost.crucible());
                Peers peers = new Peers(List.of(url), "b", SessionRouter.client(), JsonMapper.builder().build())) {
            assertThat(peers.urlOf("a")).as("learned by a round").isEqualTo(URI.create(url));
            for (int i = 0; i < 3; i++) { // each time well under a second after the round before
                peers.forget("a"); // as the router does when a forward to it failed
                assertThat(peers.urlOf("a")).as("asked again, round %d", i + 2).isEqualTo(URI.create(url));
            }
            assertThat(peers.urlOf("nobody")).as("a name no peer answers to").isNull();
        }
    }
}
