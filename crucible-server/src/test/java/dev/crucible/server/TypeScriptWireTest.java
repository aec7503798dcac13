package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import dev.crucible.testhost.Requires;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The TypeScript SDK's wire types ({@code clients/typescript/src/wire.ts}) are what its generator
 * ({@code scripts/wire.mjs}) makes of {@code openapi.json} now, which {@link WireContractTest} holds to the server's
 * records: a record's new field, once documented, is in the SDK's types or this fails (with how to regenerate).
 */
@Requires(Capability.NODE)
class TypeScriptWireTest {
    private static final Path SDK = TypeScriptSdkTest.DIR;
    private static final Path OPENAPI = Path.of("src/main/resources/dev/crucible/server/openapi.json");

    private static String generate(Path openapi, Path out) throws IOException, InterruptedException {
        Process node = new ProcessBuilder(List.of("node", "scripts/wire.mjs", "--from", openapi.toAbsolutePath()
                .toString(), "--out", out.toString())).directory(SDK.toFile()).redirectErrorStream(true).start();
        String said = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(node.waitFor(1, TimeUnit.MINUTES)).isTrue();
        assertThat(node.exitValue()).as(said).isZero();
        return Files.readString(out);
    }

    @Test
    void wireTsIsWhatTheOpenApiDocumentMakes(@TempDir Path dir) throws Exception {
        assertThat(Files.readString(SDK.resolve("src/wire.ts")))
                .as("clients/typescript/src/wire.ts is stale: run `npm run generate` in clients/typescript")
                .isEqualTo(generate(OPENAPI, dir.resolve("wire.ts")));
    }

    /** A property added to a schema comes out in its interface, required or optional as the schema says. */
    @Test
    void aDocumentedFieldReachesTheTypes(@TempDir Path dir) throws Exception {
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode doc = (ObjectNode) json.readTree(OPENAPI.toFile());
        ObjectNode session = (ObjectNode) doc.at("/components/schemas/Session");
        ((ObjectNode) session.get("properties")).putObject("new_field").put("type", "integer")
                .put("description", "a field the server has just added");
        session.withArray("required").add("new_field");
        Path changed = dir.resolve("openapi.json");
        json.writeValue(changed.toFile(), doc);
        String types = generate(changed, dir.resolve("wire.ts"));
        assertThat(types).contains("  /** a field the server has just added */\n  new_field: number;\n");
        assertThat(types).isNotEqualTo(Files.readString(SDK.resolve("src/wire.ts")));
    }
}
