package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * MCP over streamable HTTP at /mcp, driven by the official MCP TypeScript SDK client from npm (clients/node-tests),
 * plus what must be refused before the SDK: no token, a foreign Origin, a foreign Host.
 */
class McpTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String TOKEN = "mcp-token";
    static final String INITIALIZE = """
            {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",\
            "capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}""";
    static CrucibleServer server;
    static Http http;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(TOKEN)).withPool(Map.of()),
                TestHost.crucible());
        http = Http.to(server, TOKEN);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** Runs clients/node-tests/mcp.mjs with {@code args}; the JSON it printed. */
    static JsonNode nodeClient(String... args) throws Exception {
        Path dir = Path.of("..", "clients", "node-tests").toAbsolutePath().normalize();
        Capability.NPM_CLIENTS.require(Files.isDirectory(dir.resolve("node_modules/@modelcontextprotocol/sdk"))
                ? null : dir + "/node_modules/@modelcontextprotocol/sdk is missing (npm ci there; ./run-tests does)");
        List<String> command = new ArrayList<>(List.of("node", "mcp.mjs"));
        command.addAll(List.of(args));
        Process node = new ProcessBuilder(command).directory(dir.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        String out = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(node.waitFor(3, TimeUnit.MINUTES)).isTrue();
        assertThat(node.exitValue()).as(out).isZero();
        return JSON.readTree(out);
    }

    /** What the scenario of mcp.mjs must get, over either transport. */
    static void assertScenario(JsonNode r) {
        assertThat(r.at("/server/name").asString()).isEqualTo("crucible");
        assertThat(r.get("instructions").asString()).contains("run_code", "run_in_session");
        assertThat(r.get("tools").valueStream().map(JsonNode::asString)).containsExactly("run_code", "list_runtimes",
                "create_session", "run_in_session", "write_file", "read_file", "list_files",
                "str_replace_based_edit_tool", "apply_patch", "shell", "bash", "close_session");
        assertThat(r.at("/runCodeSchema/description").asString()).contains("no network", "print()");
        assertThat(r.at("/runCodeSchema/inputSchema/required/0").asString()).isEqualTo("code");
        assertThat(r.at("/hello/text").asString()).isEqualTo("42\n");
        assertThat(r.at("/fenced/text").asString()).isEqualTo("fenced\n");
        assertThat(r.at("/js/text").asString()).isEqualTo("2,4,6\n");
        assertThat(r.at("/failing/text").asString()).isEqualTo("partial\n[the program failed with exit code 3]");
        assertThat(r.at("/failing/isError").asBoolean()).isFalse();
        assertThat(r.at("/cell2/text").asString()).isEqualTo("Out[2]: 42"); // the MCP session's own session
        assertThat(r.at("/read/text").asString()).isEqualTo("hello from mcp");
        assertThat(r.at("/readByCode/text").asString()).isEqualTo("Out[3]: 'HELLO FROM MCP'");
        assertThat(r.at("/list/text").asString()).isEqualTo("notes/");
        assertThat(r.at("/jsCell/text").asString()).isEqualTo("Out[1]: 42");
        assertThat(r.at("/afterClose/isError").asBoolean()).isTrue();
        assertThat(r.at("/runtimes/text").asString()).contains("python 3", "javascript");
        for (String bad : List.of("missingCode", "unknownLanguage", "traversal")) {
            assertThat(r.at("/" + bad + "/isError").asBoolean()).as(bad).isTrue();
        }
        assertThat(r.at("/missingCode/text").asString()).contains("needs 'code'");
        assertThat(r.at("/traversal/text").asString()).contains("..");
        assertThat(r.get("unknownTool").asString()).contains("Unknown tool");
    }

    @Test
    void officialTypeScriptClientOverStreamableHttp() throws Exception {
        assertScenario(nodeClient("http", http.base() + "/mcp", TOKEN));
        assertThat(Path.of("/etc/evil")).doesNotExist();
    }

    @Test
    void refusedWithoutTokenOrFromAForeignOrigin() throws Exception {
        HttpResponse<String> anonymous = Http.to(server, null).send(HttpRequest.newBuilder(URI.create(http.base() + "/mcp"))
                .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(INITIALIZE)));
        assertThat(anonymous.statusCode()).isEqualTo(401);
        assertThat(JSON.readTree(anonymous.body()).at("/error/code").asString()).isEqualTo("unauthorized");

        HttpResponse<String> foreign = http.send(HttpRequest.newBuilder(URI.create(http.base() + "/mcp"))
                .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                .header("Origin", "http://evil.example").POST(HttpRequest.BodyPublishers.ofString(INITIALIZE)));
        assertThat(foreign.statusCode()).isEqualTo(403);

        HttpResponse<String> local = http.send(HttpRequest.newBuilder(URI.create(http.base() + "/mcp"))
                .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                .header("Origin", "http://localhost:" + server.port()).POST(HttpRequest.BodyPublishers.ofString(INITIALIZE)));
        assertThat(local.statusCode()).isEqualTo(200);
        assertThat(local.headers().firstValue("Mcp-Session-Id")).isPresent();
    }

    @Test
    void aForeignHostIsRefused() throws Exception {
        // DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends Host: evil.example (a raw socket, since
        // the JDK's client will not set Host)
        byte[] body = INITIALIZE.getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket("127.0.0.1", server.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /mcp HTTP/1.1\r\nHost: evil.example:" + server.port() + "\r\nAuthorization: Bearer " + TOKEN
                    + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                    + "Connection: close\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            out.write(body);
            out.flush();
            InputStream in = socket.getInputStream();
            String status = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().findFirst().orElse("");
            assertThat(status).startsWith("HTTP/1.1 4").doesNotStartWith("HTTP/1.1 401");
        }
    }
}
