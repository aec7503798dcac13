package dev.crucible.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The pure parts of the tools: definitions, renderings, fence removal, reply inspection. */
class ToolsTest {
    @Test
    void fencesTheModelAddedAnywayAreRemoved() {
        assertThat(Tools.stripFences("```python\nprint(1)\n```")).isEqualTo("print(1)\n");
        assertThat(Tools.stripFences("\n  ```py\nif x:\n    y()\n```  \n")).isEqualTo("if x:\n    y()\n");
        assertThat(Tools.stripFences("```\nprint(2)")).isEqualTo("print(2)\n"); // the closing fence cut off
        assertThat(Tools.stripFences("~~~\nls\n~~~")).isEqualTo("ls\n");
        assertThat(Tools.stripFences("```print(3)```")).isEqualTo("print(3)");
        assertThat(Tools.stripFences("```python\n```")).isEmpty();
        // anything else is left exactly as sent, fences inside included
        assertThat(Tools.stripFences("s = '```'\nprint(s)\n")).isEqualTo("s = '```'\nprint(s)\n");
        assertThat(Tools.stripFences("  indented()\n")).isEqualTo("  indented()\n");
        assertThat(Tools.stripFences(null)).isNull();
    }

    @Test
    void everyFormatCarriesTheSameDefinitions() {
        List<Tools.Tool> all = Tools.of(Tools.Set.ALL, List.of("python", "bash"));
        assertThat(all).extracting(Tools.Tool::name).containsExactly("run_code", "list_runtimes", "create_session",
                "run_in_session", "write_file", "read_file", "list_files", Tools.TEXT_EDITOR, Tools.APPLY_PATCH,
                Tools.SHELL, Tools.BASH, "close_session");
        for (String format : List.of("openai", "openai-functions", "anthropic", "mcp")) {
            JsonNode rendered = Tools.render(all, format);
            assertThat(rendered.size()).isEqualTo(all.size());
            for (int i = 0; i < all.size(); i++) {
                JsonNode tool = format.equals("openai") ? rendered.get(i).get("function") : rendered.get(i);
                if (format.equals("anthropic") && all.get(i).name().equals(Tools.TEXT_EDITOR)) {
                    // Anthropic's own client tool, which Claude is trained on: its type and name only
                    assertThat(tool.toString()).isEqualTo("{\"type\":\"text_editor_20250728\",\"name\":"
                            + "\"str_replace_based_edit_tool\"}");
                    continue;
                }
                if (format.equals("anthropic") && all.get(i).name().equals(Tools.BASH)) {
                    assertThat(tool.toString()).isEqualTo("{\"type\":\"bash_20250124\",\"name\":\"bash\"}");
                    continue;
                }
                JsonNode schema = tool.get(switch (format) {
                    case "anthropic" -> "input_schema";
                    case "mcp" -> "inputSchema";
                    default -> "parameters";
                });
                assertThat(tool.get("name").asString()).isEqualTo(all.get(i).name());
                assertThat(tool.get("description").asString()).isEqualTo(all.get(i).description());
                assertThat(schema).isEqualTo(all.get(i).inputSchema());
                assertThat(schema.get("type").asString()).isEqualTo("object");
            }
        }
        assertThat(Tools.render(all, "openai").get(0).get("type").asString()).isEqualTo("function");
        JsonNode runCode = all.getFirst().inputSchema();
        assertThat(runCode.at("/properties/language/enum").toString()).isEqualTo("[\"python\",\"bash\"]");
        assertThat(runCode.at("/properties/language/description").asString()).contains("python when omitted");
        // the session tools name their session as optional: the client or the MCP session supplies one
        assertThat(all.get(3).inputSchema().get("required").toString()).isEqualTo("[\"code\"]");
        assertThat(all.get(3).inputSchema().at("/properties/session_id/type").asString()).isEqualTo("string");
        assertThat(Tools.of(Tools.Set.STATELESS, null)).extracting(Tools.Tool::name).containsExactly("run_code");
        assertThat(Tools.of(Tools.Set.SESSION, null)).extracting(Tools.Tool::name).containsExactly("run_in_session",
                "write_file", "read_file", "list_files", Tools.TEXT_EDITOR, Tools.APPLY_PATCH, Tools.SHELL,
                Tools.BASH);
    }

    @Test
    void badFormatsAndSetsAreClearErrors() {
        assertThatThrownBy(() -> Tools.render(Tools.of(Tools.Set.ALL, null), "gemini"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("openai, openai-functions");
        assertThatThrownBy(() -> Tools.Set.parse("most")).hasMessageContaining("stateless, session or all");
        assertThat(Tools.Set.parse(" Session ")).isEqualTo(Tools.Set.SESSION);
    }

    @Test
    void repliesWithAndWithoutToolCalls() {
        var json = CrucibleClient.JSON;
        assertThat(CodeTools.hasToolCalls(json.readTree("""
                {"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                 "function": {"name": "run_code", "arguments": "{}"}}]}}]}"""))).isTrue();
        assertThat(CodeTools.hasToolCalls(json.readTree("""
                {"choices": [{"message": {"role": "assistant", "content": "done"}}]}"""))).isFalse();
        assertThat(CodeTools.hasToolCalls(json.readTree("""
                {"role": "assistant", "function_call": {"name": "run_code", "arguments": "{}"}}"""))).isTrue();
        assertThat(CodeTools.hasToolCalls(json.readTree("""
                {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"},
                 {"type": "tool_use", "id": "t", "name": "run_code", "input": {}}]}"""))).isTrue();
        assertThat(CodeTools.hasToolCalls(json.readTree("""
                {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}]}"""))).isFalse();
    }
}
