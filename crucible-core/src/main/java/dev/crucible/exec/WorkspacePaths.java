package dev.crucible.exec;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

/** Validates workspace-relative file names before anything touches the file system (hostile cases files-upload-*). */
public final class WorkspacePaths {
    static final int MAX_PATH_BYTES = 1024;
    static final int MAX_COMPONENT_BYTES = 255;

    private WorkspacePaths() {}

    /**
     * Returns {@code path} when it is a safe relative path, else throws.
     *
     * @throws RequestException ({@code invalid_file}) for absolute paths, {@code .}/{@code ..}/empty
     *     components, NUL, backslashes, control or bidi characters, or names that are too long
     */
    public static String validate(String path) {
        if (path == null || path.isEmpty()) {
            throw invalid(path, "is empty");
        }
        if (path.getBytes(StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
            throw invalid(path, "is longer than " + MAX_PATH_BYTES + " bytes");
        }
        if (path.startsWith("/")) {
            throw invalid(path, "is absolute; give a path relative to the workspace");
        }
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c < 0x20 || c == 0x7f || c == '\\' || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
                    || c == 0x200e || c == 0x200f) {
                throw invalid(path, "contains a control, bidi or backslash character");
            }
        }
        for (String component : path.split("/", -1)) {
            if (component.isEmpty() || component.equals(".") || component.equals("..")) {
                throw invalid(path, "has an empty, '.' or '..' component");
            }
            if (component.getBytes(StandardCharsets.UTF_8).length > MAX_COMPONENT_BYTES) {
                throw invalid(path, "has a component longer than " + MAX_COMPONENT_BYTES + " bytes");
            }
        }
        return path;
    }

    /**
     * An absolute path with its {@code .}, {@code ..} and empty components resolved by name, as the kernel resolves them
     * from a root and Go's {@code filepath.Clean} writes them: {@code ..} at {@code /} is {@code /}, so nothing climbs
     * above the root it is resolved in ({@code /workspace/..} is {@code /}, {@code /../etc} is {@code /etc}). The
     * components left are not otherwise checked ({@link #validate} does that).
     *
     * @throws IllegalArgumentException for a path that is not absolute
     */
    public static String cleanAbsolute(String path) {
        if (path == null || !path.startsWith("/")) {
            throw new IllegalArgumentException("not an absolute path: " + path);
        }
        ArrayDeque<String> kept = new ArrayDeque<>();
        for (String part : path.split("/")) {
            if (part.equals("..")) {
                kept.pollLast();
            } else if (!part.isEmpty() && !part.equals(".")) {
                kept.addLast(part);
            }
        }
        return "/" + String.join("/", kept);
    }

    private static RequestException invalid(String path, String why) {
        String shown = path == null ? "null" : path.replaceAll("\\p{Cntrl}", "?");
        return new RequestException(ErrorCode.INVALID_FILE, "file path '" + shown + "' " + why);
    }
}
