package dev.crucible.server.http;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.exc.UnrecognizedPropertyException;
import tools.jackson.databind.introspect.BeanPropertyDefinition;
import tools.jackson.databind.json.JsonMapper;

/**
 * The words of a refused unknown field: {@code unknown field `timeout`; did you mean `limits.timeout_ms`?}. The field
 * is named by its whole path in the body ({@code limits.timout_ms}, {@code files[0].encodng}); the suggestion is the
 * nearest of the names Jackson knows at that level and, one level down, in the objects those names hold (so a
 * top-level {@code timeout} finds {@code limits.timeout_ms}): a name containing the unknown one, or containing it, or
 * within a few edits of it (case, {@code _} and {@code -} ignored). With no name near, the known ones at the level.
 */
final class UnknownField {
    private UnknownField() {}

    /** The message for {@code e}, read from a body by {@code json}: what to write instead. */
    static String message(UnrecognizedPropertyException e, JsonMapper json) {
        String parent = path(e.getPath().subList(0, Math.max(0, e.getPath().size() - 1)));
        String prefix = parent.isEmpty() ? "" : parent + ".";
        String field = prefix + e.getPropertyName();
        List<String> level = e.getKnownPropertyIds().stream().map(String::valueOf).sorted().toList();
        String near = nearest(e.getPropertyName(), candidates(e.getReferringClass(), level, json));
        return "unknown field `" + Bodies.printable(field) + "`; " + (near != null ? "did you mean `" + prefix + near + "`?"
                : level.isEmpty() ? "this object takes no fields" : "the fields here are " + String.join(", ", level));
    }

    /** A JSON path as written in a body: {@code limits.timeout_ms}, {@code files[0].path}. */
    static String path(List<JacksonException.Reference> references) {
        StringBuilder out = new StringBuilder();
        for (JacksonException.Reference r : references) {
            if (r.getPropertyName() != null) {
                out.append(out.isEmpty() ? "" : ".").append(r.getPropertyName());
            } else if (r.getIndex() >= 0) {
                out.append('[').append(r.getIndex()).append(']');
            }
        }
        return out.toString();
    }

    /** The names at the level, then {@code name.inner} for each record a name holds (alone or in a collection). */
    private static List<String> candidates(Class<?> owner, List<String> level, JsonMapper json) {
        List<String> all = new ArrayList<>(level);
        if (owner == null || !owner.isRecord()) {
            return all;
        }
        var context = json._deserializationContext();
        for (BeanPropertyDefinition p : context.introspectBeanDescription(json.constructType(owner)).findProperties()) {
            JavaType type = p.getPrimaryType();
            JavaType held = type != null && type.isContainerType() ? type.getContentType() : type;
            if (held == null || !held.getRawClass().isRecord() || !level.contains(p.getName())) {
                continue;
            }
            for (BeanPropertyDefinition inner : context.introspectBeanDescription(held).findProperties()) {
                all.add(p.getName() + "." + inner.getName());
            }
        }
        return all;
    }

    /** The candidate nearest {@code unknown}, or null when none is near; ties go to the shorter (shallower) name. */
    static String nearest(String unknown, List<String> candidates) {
        String u = squash(unknown);
        if (u.isEmpty()) {
            return null;
        }
        return candidates.stream()
                .filter(c -> distance(u, c) < Integer.MAX_VALUE)
                .min(Comparator.comparingInt((String c) -> distance(u, c)).thenComparingInt(String::length))
                .orElse(null);
    }

    /** 0 for the same name, then containment, then edits; MAX_VALUE when too far to be meant. */
    private static int distance(String u, String candidate) {
        String leaf = squash(candidate.substring(candidate.lastIndexOf('.') + 1));
        if (leaf.equals(u)) {
            return 0;
        }
        if (u.length() >= 3 && (leaf.contains(u) || u.contains(leaf) && leaf.length() >= 3)) {
            return 1;
        }
        int edits = edits(u, leaf);
        return edits <= Math.max(1, Math.min(u.length(), leaf.length()) / 3) ? 1 + edits : Integer.MAX_VALUE;
    }

    private static String squash(String name) {
        return name == null ? "" : name.toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
    }

    /** Levenshtein distance. */
    private static int edits(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitute, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }
}
