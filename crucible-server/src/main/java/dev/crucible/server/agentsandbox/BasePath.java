package dev.crucible.server.agentsandbox;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A contract's path confined to the base directory, as python-runtime's {@code get_safe_path}: leading slashes
 * stripped (so {@code /x} is the base's {@code x}), joined to the base, {@code .} and {@code ..} resolved; what then
 * lies outside the base is refused. The result is a path inside the sandbox, resolved there by the session's files
 * (inside the sandbox's own root, never the pod's).
 */
final class BasePath {
    private BasePath() {}

    /** Thrown for a path outside the base: the contract's 403 {@code Access denied}. */
    static final class Outside extends Exception {
        Outside(String path) {
            super("Access denied: " + path.replaceAll("\\p{Cntrl}", "?") + " is outside the sandbox base directory");
        }
    }

    /**
     * {@code path} under {@code base} (absolute, clean), clean.
     *
     * @throws Outside when it climbs out of the base
     */
    static String resolve(String base, String path) throws Outside {
        if (path.indexOf('\0') >= 0) {
            throw new Outside(path);
        }
        Deque<String> parts = new ArrayDeque<>();
        for (String part : (base + "/" + path).split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (parts.pollLast() == null) {
                    throw new Outside(path);
                }
            } else {
                parts.addLast(part);
            }
        }
        String resolved = "/" + String.join("/", parts);
        if (!resolved.equals(base) && !resolved.startsWith(base.equals("/") ? "/" : base + "/")) {
            throw new Outside(path);
        }
        return resolved;
    }
}
