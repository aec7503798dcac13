package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.TestDirs;
import dev.crucible.sandbox.SandboxConfig;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A real server on port 0 over {@code data} whose runtimes TOML puts Python behind gVisor and leaves JavaScript (and
 * the rest) on the namespace tier: the pause, fork and snapshot tests' server, started again over the same data
 * directory to show what outlives it.
 */
final class TwoTierServer implements AutoCloseable {
    /**
     * The pause, fork and snapshot tests: a {@link TwoTierServer} over a fresh directory before each test, closed
     * after; {@link #serve()} again over the same directory stands for a restart.
     */
    abstract static class Fixture {
        Path data;
        TwoTierServer tiers;
        Crucible engine;
        CrucibleServer server;
        Http http;

        /** The tokens the server takes (none: no token needed). */
        abstract Set<String> tokens();

        @BeforeEach
        void start() throws Exception {
            data = TestDirs.create("crucible-tiers-");
            serve();
        }

        void serve() throws Exception {
            tiers = TwoTierServer.start(data, tokens());
            engine = tiers.engine;
            server = tiers.server;
            http = Http.to(server, tokens().stream().sorted().findFirst().orElse(null));
        }

        @AfterEach
        void stop() {
            if (tiers != null) {
                tiers.close();
            }
        }

        JsonNode post(String path, String body) throws Exception {
            return TwoTierServer.post(http, path, body);
        }

        String cell(String id, String code) throws Exception {
            return TwoTierServer.cell(http, id, code);
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();

    final Crucible engine;
    final CrucibleServer server;

    private TwoTierServer(Crucible engine, CrucibleServer server) {
        this.engine = engine;
        this.server = server;
    }

    /** Starts one over {@code data} ({@code data/data} its data directory); {@code tokens} empty: none needed. */
    static TwoTierServer start(Path data, Set<String> tokens) throws Exception {
        Path toml = data.resolve("runtimes.toml");
        Files.writeString(toml, """
                [[runtime]]
                language = "python"
                file_name = "main.py"
                run_command = ["python3", "{file}"]
                session_command = ["python3", "-c", "{repl}"]
                isolation = "gvisor"
                """);
        Crucible engine = Crucible.start(SandboxConfig.defaults().withSlots(2), toml);
        return new TwoTierServer(engine, CrucibleServer.start(ServerConfig.defaults().withDataDir(data.resolve("data"))
                .withPort(0).withTokens(tokens).withPool(Map.of()), engine));
    }

    /** POSTs {@code body} and checks it was answered 200 or 201. */
    static JsonNode post(Http http, String path, String body) throws Exception {
        HttpResponse<String> r = http.postJson(path, body);
        assertThat(r.statusCode()).as(path + ": " + r.body()).isIn(200, 201);
        return SessionApiTest.json(r);
    }

    /** Runs a cell: its result, else its stdout and error. */
    static String cell(Http http, String id, String code) throws Exception {
        JsonNode r = post(http, "/v1/sessions/" + id + "/execute", "{\"code\": " + JSON.writeValueAsString(code) + "}");
        return r.path("result").asString(r.path("stdout").asString("") + r.path("error").toString());
    }

    @Override
    public void close() {
        server.close();
        engine.close();
    }
}
