package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import dev.crucible.testhost.Requires;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The SDKs' wire types are what their generators make of {@code openapi.json} now, which {@link WireContractTest}
 * holds to the server's records: the TypeScript SDK's {@code src/wire.ts} ({@code scripts/wire.mjs}) and the Python
 * client's {@code crucible_client/wire.py} ({@code scripts/wire.py}). A record's new field, once documented, is in
 * both SDKs' types or this fails, saying how to regenerate.
 */
class GeneratedWireTest {
    private static final Path OPENAPI = Path.of("src/main/resources/dev/crucible/server/openapi.json");
    private static final Path TYPESCRIPT = TypeScriptSdkTest.DIR;
    private static final Path PYTHON = Path.of("..", "clients", "python").toAbsolutePath().normalize();

    /** What {@code generator} (run in {@code dir}) makes of {@code openapi}, written to {@code out}. */
    private static String generate(Path dir, Path openapi, Path out, String... generator) throws Exception {
        List<String> command = new ArrayList<>(List.of(generator));
        command.addAll(List.of("--from", openapi.toAbsolutePath().toString(), "--out", out.toString()));
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(1, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(said).isZero();
        return Files.readString(out);
    }

    /** The document with a new required integer property of Session, {@code new_field}. */
    private static Path withANewField(Path dir) throws IOException {
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode doc = (ObjectNode) json.readTree(OPENAPI.toFile());
        ObjectNode session = (ObjectNode) doc.at("/components/schemas/Session");
        ((ObjectNode) session.get("properties")).putObject("new_field").put("type", "integer")
                .put("description", "a field the server has just added");
        session.withArray("required").add("new_field");
        Path changed = dir.resolve("openapi.json");
        json.writeValue(changed.toFile(), doc);
        return changed;
    }

    @Test
    @Requires(Capability.NODE)
    void typeScriptsWireTsIsWhatTheDocumentMakes(@TempDir Path dir) throws Exception {
        assertThat(Files.readString(TYPESCRIPT.resolve("src/wire.ts")))
                .as("clients/typescript/src/wire.ts is stale: run `npm run generate` in clients/typescript")
                .isEqualTo(generate(TYPESCRIPT, OPENAPI, dir.resolve("wire.ts"), "node", "scripts/wire.mjs"));
    }

    /** A property added to a schema comes out in its interface, required or optional as the schema says. */
    @Test
    @Requires(Capability.NODE)
    void aDocumentedFieldReachesTheTypeScriptTypes(@TempDir Path dir) throws Exception {
        String types = generate(TYPESCRIPT, withANewField(dir), dir.resolve("wire.ts"), "node", "scripts/wire.mjs");
        assertThat(types).contains("  /** a field the server has just added */\n  new_field: number;\n");
        assertThat(types).isNotEqualTo(Files.readString(TYPESCRIPT.resolve("src/wire.ts")));
    }

    @Test
    @Requires(Capability.PYTHON3)
    void pythonsWirePyIsWhatTheDocumentMakes(@TempDir Path dir) throws Exception {
        assertThat(Files.readString(PYTHON.resolve("src/crucible_client/wire.py")))
                .as("clients/python/src/crucible_client/wire.py is stale: run python3 clients/python/scripts/wire.py")
                .isEqualTo(generate(PYTHON, OPENAPI, dir.resolve("wire.py"), "/usr/bin/python3", "scripts/wire.py"));
    }

    @Test
    @Requires(Capability.PYTHON3)
    void aDocumentedFieldReachesThePythonTypes(@TempDir Path dir) throws Exception {
        String types = generate(PYTHON, withANewField(dir), dir.resolve("wire.py"), "/usr/bin/python3",
                "scripts/wire.py");
        assertThat(types).containsPattern("_Session = TypedDict\\(\"_Session\", \\{\n(    .*\n)*    \"new_field\": int,\n");
    }
}
