package dev.crucible.eval.codex;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * Writes a JSON tree as the TOML a person writes and edits: tables and {@code [[arrays of tables]]} rather than
 * inline tables, and multi-line text as {@code '''} literal strings. Codex Runner files are read, checked and cleaned
 * by hand between commands, so the output keeps that shape (Jackson's TOML writer puts everything on one line).
 */
final class TomlWriter {
    private TomlWriter() {}

    static String write(JsonNode root) {
        StringBuilder out = new StringBuilder();
        table(out, List.of(), root, false);
        return out.toString();
    }

    private static void table(StringBuilder out, List<String> path, JsonNode node, boolean arrayItem) {
        if (!path.isEmpty()) {
            if (!out.isEmpty()) {
                out.append('\n');
            }
            String name = String.join(".", path.stream().map(TomlWriter::key).toList());
            out.append(arrayItem ? "[[" + name + "]]" : "[" + name + "]").append('\n');
        }
        List<Map.Entry<String, JsonNode>> nested = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            JsonNode v = e.getValue();
            if (v.isObject() || (v.isArray() && !v.isEmpty() && v.valueStream().allMatch(JsonNode::isObject))) {
                nested.add(e);
            } else if (!v.isNull()) {
                out.append(key(e.getKey())).append(" = ").append(value(v)).append('\n');
            }
        }
        for (Map.Entry<String, JsonNode> e : nested) {
            List<String> child = new ArrayList<>(path);
            child.add(e.getKey());
            if (e.getValue().isObject()) {
                table(out, child, e.getValue(), false);
            } else {
                for (JsonNode item : e.getValue()) {
                    table(out, child, item, true);
                }
            }
        }
    }

    private static String key(String k) {
        return k.matches("[A-Za-z0-9_-]+") ? k : basic(k);
    }

    private static String value(JsonNode v) {
        if (v.isString()) {
            return string(v.asString());
        }
        if (v.isArray()) {
            List<String> items = new ArrayList<>();
            v.forEach(i -> items.add(value(i)));
            return "[" + String.join(", ", items) + "]";
        }
        if (v.isObject()) { // an inline table for an object inside an array of scalars (rare)
            List<String> items = new ArrayList<>();
            v.properties().forEach(e -> items.add(key(e.getKey()) + " = " + value(e.getValue())));
            return "{" + String.join(", ", items) + "}";
        }
        return v.toString(); // numbers and booleans
    }

    /** Multi-line text as a literal ''' string when it can be (no ''' inside, no control characters but newline). */
    private static String string(String s) {
        boolean plain = s.chars().noneMatch(c -> (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f);
        if (plain && s.contains("\n") && !s.contains("'''") && !s.endsWith("'") && !s.contains("\r")) {
            return "'''\n" + s + "'''"; // the newline right after the opening quotes is not part of the string
        }
        if (plain && !s.contains("\n") && !s.contains("'")) {
            return "'" + s + "'";
        }
        return basic(s);
    }

    private static String basic(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\t' -> b.append("\\t");
                case '\r' -> b.append("\\r");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
