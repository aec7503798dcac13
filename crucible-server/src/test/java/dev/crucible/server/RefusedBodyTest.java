package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * A client that sends a whole oversized body before it reads (Python's urllib and requests send no {@code Expect:
 * 100-continue}) gets the JSON error, not a connection reset: the server reads and discards the rest of a refused
 * body, up to a bound, before it answers (nginx's lingering close). Driven by the real urllib of /usr/bin/python3.
 */
class RefusedBodyTest {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static CrucibleServer server;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of("t")).withPool(Map.of()),
                TestHost.crucible());
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** Runs urllib against the server; prints {@code status body} of the answer, or the error urllib raised. */
    static String urllib(String method, String path, int megabytes, boolean token) throws Exception {
        String script = """
                import sys, urllib.request, urllib.error
                url, method, size, token = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == '1'
                headers = {'Content-Type': 'application/json'}
                if token:
                    headers['Authorization'] = 'Bearer t'
                req = urllib.request.Request(url, data=b'{' + b' ' * (size << 20) + b'}', headers=headers, method=method)
                try:
                    r = urllib.request.urlopen(req, timeout=60)
                    print(r.status, r.read().decode())
                except urllib.error.HTTPError as e:
                    print(e.code, e.read().decode())
                except Exception as e:
                    print('failed', type(e).__name__, e)
                """;
        Process p = new ProcessBuilder(PYTHON.toString(), "-c", script, "http://127.0.0.1:" + server.port() + path, method,
                Integer.toString(megabytes), token ? "1" : "0").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        p.waitFor();
        return out;
    }

    @Test
    void anOversizedBodyGetsItsJson413() throws Exception {
        Capability.PYTHON3.require();
        for (int i = 0; i < 3; i++) { // a reset is a race: the same answer every time
            assertThat(urllib("POST", "/v1/execute", 40, true)).startsWith("413 ").contains("payload_too_large");
        }
        assertThat(urllib("POST", "/run_code", 40, true)).startsWith("413 ").contains("payload_too_large");
        var created = Http.to(server, "t").postJson("/v1/sessions", "{}");
        String id = JsonMapper.builder().build().readTree(created.body()).get("id").asString();
        assertThat(urllib("PUT", "/v1/sessions/" + id + "/files/big.bin", 40, true)).startsWith("413 ")
                .contains("file_too_large");
        assertThat(urllib("PUT", "/v1/sessions/none/files/big.bin", 40, true)).startsWith("404 ")
                .contains("session_not_found");
    }

    @Test
    void aBodyRefusedForAnotherReasonIsReadableToo() throws Exception {
        Capability.PYTHON3.require();
        assertThat(urllib("POST", "/v1/execute", 20, false)).startsWith("401 ");
        assertThat(urllib("POST", "/v1/no-such-route", 20, true)).startsWith("404 ");
    }
}
