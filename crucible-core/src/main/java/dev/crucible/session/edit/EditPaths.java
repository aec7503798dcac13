package dev.crucible.session.edit;

/**
 * A path as a model writes it ({@code /workspace/app.py}, {@code app.py}, {@code ./src/x.js}) as a path relative to
 * the session's {@code /workspace}. Any other absolute path is refused: the rest of the session's file system is
 * read-only.
 */
final class EditPaths {
    static final String WORKSPACE = "/workspace";

    private EditPaths() {}

    /**
     * @throws PatchException (an {@link IllegalArgumentException}) for an empty path or one outside /workspace
     */
    static String relative(String path) {
        String p = path == null ? "" : path.strip();
        if (p.equals(WORKSPACE) || p.equals(WORKSPACE + "/") || p.equals(".") || p.equals("./")) {
            return "";
        }
        if (p.startsWith(WORKSPACE + "/")) {
            p = p.substring(WORKSPACE.length() + 1);
        } else if (p.startsWith("/")) {
            throw new PatchException("Error: " + p + " is outside /workspace; only files under /workspace can be"
                    + " viewed or changed (give a path like /workspace/app.py)");
        }
        while (p.startsWith("./")) {
            p = p.substring(2);
        }
        if (p.isEmpty()) {
            throw new PatchException("Error: the path is empty; give a file under /workspace, e.g. /workspace/app.py");
        }
        return p;
    }

    /** The absolute path a model sees for {@code relative}. */
    static String shown(String relative) {
        return relative.isEmpty() ? WORKSPACE : WORKSPACE + "/" + relative;
    }
}
