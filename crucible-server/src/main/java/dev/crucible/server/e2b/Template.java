package dev.crucible.server.e2b;

import java.util.Map;

/**
 * What a {@code templateID} names: what the operator maps it to ({@code serve --e2b-template}), else E2B's own names
 * ({@code base}, {@code code-interpreter-v1}) are a Python session on the host's file system; a runtime's language
 * is a session of it; a name with {@code :} or {@code /} is an image of the store (its Python); {@code gvisor} is a
 * Python session behind gVisor; anything else is unknown (404). A name or a mapped value may end in a tier,
 * {@code @gvisor} or {@code @namespaces} ({@code node@gvisor}, {@code python:3.12-slim@gvisor}): the session's
 * {@code isolation} (docs/isolation.md), no image digest being spelt so.
 */
record Template(String language, String image, String isolation) {
    static Template of(String id, Map<String, String> named) {
        String mapped = named.get(id);
        String name = mapped != null ? mapped : id;
        String tier = null;
        for (String wire : new String[] {"gvisor", "namespaces"}) {
            if (name.endsWith("@" + wire)) {
                tier = wire;
                name = name.substring(0, name.length() - wire.length() - 1);
            }
        }
        if (mapped != null) {
            return name.contains(":") || name.contains("/") ? new Template("python", name, tier)
                    : new Template(name, null, tier);
        }
        return switch (name) {
            case "base", "code-interpreter-v1", "code-interpreter", "desktop" -> new Template("python", null, tier);
            case "gvisor" -> new Template("python", null, tier == null ? "gvisor" : tier);
            case "node", "nodejs" -> new Template("javascript", null, tier);
            default -> name.contains(":") || name.contains("/") ? new Template("python", name, tier)
                    : new Template(name, null, tier);
        };
    }

    /** Whether {@code id} (or what the operator maps it to) is E2B's {@code desktop}: a session made ready for it. */
    static boolean desktop(String id, Map<String, String> named) {
        return named.getOrDefault(id, id).replaceFirst("@[a-z]+$", "").equals("desktop");
    }
}
