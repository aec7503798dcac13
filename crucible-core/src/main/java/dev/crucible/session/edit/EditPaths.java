package dev.crucible.session.edit;

import dev.crucible.exec.WorkspacePaths;

/**
 * A path as a model writes it ({@code /workspace/app.py}, {@code app.py}, {@code ./src/x.js}, {@code /etc/app.conf})
 * as {@link EditFiles} takes it: relative to the session's {@code /workspace} for a relative path or one under
 * {@code /workspace}, absolute (the session's whole file system, as its user reaches it) for any other.
 */
final class EditPaths {
    static final String WORKSPACE = "/workspace";

    private EditPaths() {}

    /**
     * @throws PatchException (an {@link IllegalArgumentException}) for an empty path
     */
    static String of(String path) {
        String p = path == null ? "" : path.strip();
        if (p.startsWith("/")) {
            p = WorkspacePaths.cleanAbsolute(p); // /workspace/.. is / and .. stops at /
        }
        if (p.equals(WORKSPACE) || p.equals(WORKSPACE + "/") || p.equals(".") || p.equals("./")) {
            return "";
        }
        if (p.startsWith(WORKSPACE + "/")) {
            p = p.substring(WORKSPACE.length() + 1);
        } else if (p.startsWith("/")) {
            return p;
        }
        while (p.startsWith("./")) {
            p = p.substring(2);
        }
        if (p.isEmpty()) {
            throw new PatchException("Error: the path is empty; give a file's absolute path, e.g. /workspace/app.py");
        }
        return p;
    }

    /** The absolute path a model sees for a path of {@link #of}. */
    static String shown(String path) {
        return path.startsWith("/") ? path : path.isEmpty() ? WORKSPACE : WORKSPACE + "/" + path;
    }
}
