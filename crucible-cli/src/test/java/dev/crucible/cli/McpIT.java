package dev.crucible.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestDirs;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** {@code crucible mcp}: the official MCP TypeScript SDK client (npm) starts the JAR as its stdio server. */
class McpIT {
    @Test
    void officialTypeScriptClientOverStdio() throws Exception {
        Path node = Path.of("..", "clients", "node-tests").toAbsolutePath().normalize();
        Capability.NPM_CLIENTS.require(Files.isDirectory(node.resolve("node_modules/@modelcontextprotocol/sdk"))
                ? null : node + "/node_modules/@modelcontextprotocol/sdk is missing (npm ci there; ./run-tests does)");
        Path data = TestDirs.create("crucible-mcp-data-"); // deleted at exit
        Process p = new ProcessBuilder("node", "mcp.mjs", "stdio",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-native-access=ALL-UNNAMED",
                "-jar", CliIT.JAR.toAbsolutePath().toString(), "mcp", "--data-dir", data.toString())
                .directory(node.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(3, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        JsonNode r = JsonMapper.builder().build().readTree(out); // stdout carried the protocol and nothing else
        assertThat(r.get("tools").valueStream().map(JsonNode::asString)).contains("run_code", "run_in_session",
                "write_file", "read_file", "list_files", "list_runtimes");
        assertThat(r.at("/hello/text").asString()).isEqualTo("42\n");
        assertThat(r.at("/fenced/text").asString()).isEqualTo("fenced\n");
        assertThat(r.at("/cell2/text").asString()).isEqualTo("Out[2]: 42");
        assertThat(r.at("/read/text").asString()).isEqualTo("hello from mcp");
        assertThat(r.at("/jsCell/text").asString()).isEqualTo("Out[1]: 42");
        for (String bad : List.of("missingCode", "unknownLanguage", "traversal", "afterClose")) {
            assertThat(r.at("/" + bad + "/isError").asBoolean()).as(bad).isTrue();
        }
        // the session the MCP client used keeps its files under --data-dir: in its workspace image when loop mounts
        // work (unmounted when the JAR stopped; read with e2fsprogs' debugfs), else in its workspace directory
        try (var sessions = Files.list(data.resolve("sessions"))) {
            assertThat(sessions.map(s -> readKept(s, "notes/a.txt")).filter(t -> t != null).toList())
                    .containsExactly("hello from mcp");
        }
        // the JAR ended with its stdin, leaving no interpreter behind
        assertThat(ProcessHandle.allProcesses().filter(h -> h.info().commandLine().orElse("").contains(data.toString())))
                .isEmpty();
    }

    static String readKept(Path session, String file) {
        try {
            Path image = session.resolve("workspace.img");
            if (!Files.exists(image)) {
                Path plain = session.resolve("workspace").resolve(file);
                return Files.exists(plain) ? Files.readString(plain) : null;
            }
            // a session with a root of its own keeps its workspace as w/ of the image (its root's layers in r/)
            String inImage = Files.isDirectory(session.resolve("disk")) ? "/w/" + file : "/" + file;
            Process p = new ProcessBuilder("/usr/sbin/debugfs", "-R", "cat " + inImage, image.toString()).start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return p.waitFor() == 0 && !text.isEmpty() ? text : null;
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
