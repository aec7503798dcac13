package dev.crucible.server;

import dev.crucible.TestHost;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The real server on port 0 for one test class, on the shared test engine, with a data directory of its own and no
 * token: started before the class's tests, closed after them.
 *
 * <pre>{@code @RegisterExtension static final TestServer SERVER = TestServer.with(c -> c.withPool(Map.of()));}</pre>
 */
final class TestServer implements BeforeAllCallback, AfterAllCallback {
    private final UnaryOperator<ServerConfig> settings;
    private CrucibleServer server;
    private Http http;

    private TestServer(UnaryOperator<ServerConfig> settings) {
        this.settings = settings;
    }

    /** {@link Http#config()} on port 0 without tokens, then {@code settings}. */
    static TestServer with(UnaryOperator<ServerConfig> settings) {
        return new TestServer(settings);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        server = CrucibleServer.start(settings.apply(Http.config().withPort(0).withTokens(Set.of())), TestHost.crucible());
        http = Http.to(server, null);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        server.close();
    }

    CrucibleServer server() {
        return server;
    }

    /** A client without a token. */
    Http http() {
        return http;
    }
}
