package dev.crucible.session.workspace;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.WorkspacePaths;
import dev.crucible.session.edit.EditFiles;
import java.util.List;

/**
 * The files of one session, with the download cap and the workspace quota applied. A relative path, or one under
 * {@code /workspace}, is the workspace's (reached with or without a running sandbox); any other absolute path is of
 * the session's whole file system as its sandbox sees it (its sandbox is started when it has none): resolved inside
 * the sandbox's root, never the host's, as the session's user (or its root, {@link #as}).
 */
public final class SessionFiles {
    private static final String WORKSPACE = "/workspace";

    private final Workspace workspace;
    private final long maxFileBytes;
    private final long quota;
    private final Roots roots;
    private final boolean root;

    /** The session's whole file system as its user or its root reaches it, its sandbox started when it has none. */
    @FunctionalInterface
    public interface Roots {
        Workspace of(boolean root) throws InterruptedException;
    }

    public SessionFiles(Workspace workspace, long maxFileBytes, long quota, Roots roots) {
        this(workspace, maxFileBytes, quota, roots, false);
    }

    private SessionFiles(Workspace workspace, long maxFileBytes, long quota, Roots roots, boolean root) {
        this.workspace = workspace;
        this.maxFileBytes = maxFileBytes;
        this.quota = quota;
        this.roots = roots;
        this.root = root;
    }

    /**
     * These files as {@code user} reaches them: {@code "user"} (the default, uid 1000 inside) or {@code "root"} (root of
     * a session with a root of its own: every path through the sandbox's root, {@code /workspace} included).
     *
     * @throws RequestException {@code invalid_request} for another user
     */
    public SessionFiles as(String user) {
        if (user == null || user.equals("user")) {
            return root ? new SessionFiles(workspace, maxFileBytes, quota, roots, false) : this;
        }
        if (!user.equals("root")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "user is \"user\" (the default) or \"root\", not \""
                    + user.replaceAll("\\p{Cntrl}", "?") + "\"");
        }
        return new SessionFiles(workspace, maxFileBytes, quota, roots, true);
    }

    /**
     * Checks a file's path before anything is read or started for it: relative to the workspace, or absolute, and not
     * a directory the session cannot be without ({@code /}, {@code /workspace}, {@code .}).
     *
     * @throws RequestException {@code invalid_file} as {@link dev.crucible.exec.WorkspacePaths#validate}, {@code
     *     not_a_file} for those directories
     */
    public static void check(String path) {
        String cleaned = clean(path);
        if (cleaned.isEmpty() || cleaned.equals("/") || cleaned.equals(WORKSPACE)) {
            throw isADirectory(path);
        }
        WorkspacePaths.validate(cleaned.startsWith("/") ? cleaned.substring(1) : cleaned);
    }

    /**
     * A path of the API in the one form {@link #target} reads. An absolute path is cleaned as the kernel resolves it
     * ({@link dev.crucible.exec.WorkspacePaths#cleanAbsolute}: {@code /workspace/..} is {@code /}, and {@code ..} never
     * climbs above {@code /}). A relative path is the workspace's, as it is given: {@code ""}, {@code .} and {@code ./}
     * are the workspace itself, any other is checked by {@link dev.crucible.exec.WorkspacePaths#validate} when it is
     * used, and one that climbs out with {@code ..} is refused here ({@code files-upload-path-traversal}).
     *
     * @throws RequestException {@code invalid_file} for a relative path with a {@code ..} component
     */
    static String clean(String path) {
        if (path == null || path.isEmpty() || path.equals(".") || path.equals("./")) {
            return "";
        }
        if (path.startsWith("/")) {
            return WorkspacePaths.cleanAbsolute(path);
        }
        for (String part : path.split("/")) {
            if (part.equals("..")) {
                throw new RequestException(ErrorCode.INVALID_FILE, "'" + path.replaceAll("\\p{Cntrl}", "?")
                        + "' has a '..' component: a relative path names a file in /workspace; name one outside it"
                        + " absolutely (e.g. /, /etc/hosts)");
            }
        }
        return path;
    }

    /** Where a path of the API lies: the workspace's tree, or the sandbox's root, and the path relative to it. */
    private record Target(Workspace files, String path, String shownAs, boolean workspace) {
        String shown(String relative) {
            return shownAs + relative;
        }

        /** The path of a file, never the top of the tree ({@code /} or the workspace). */
        String file(String asked) {
            if (path.isEmpty()) {
                throw isADirectory(asked);
            }
            return path;
        }
    }

    private static RequestException isADirectory(String asked) {
        return new RequestException(ErrorCode.NOT_A_FILE, "'" + (asked == null ? "" : asked).replaceAll("\\p{Cntrl}",
                "?") + "' is a directory the session cannot be without; name a file in it");
    }

    private Target target(String asked) {
        String path = clean(asked);
        if (!path.startsWith("/")) {
            return root ? rooted(path.isEmpty() ? WORKSPACE : WORKSPACE + "/" + path)
                    : new Target(workspace, path, "", true);
        }
        if (!root && path.equals(WORKSPACE)) {
            return new Target(workspace, "", WORKSPACE + "/", true);
        }
        if (!root && path.startsWith(WORKSPACE + "/")) {
            return new Target(workspace, path.substring(WORKSPACE.length() + 1), WORKSPACE + "/", true);
        }
        return rooted(path);
    }

    /** An absolute, cleaned path in the sandbox's root ({@code /} itself is {@code ""}). */
    private Target rooted(String path) {
        String relative = path.substring(1);
        if (!relative.isEmpty()) {
            WorkspacePaths.validate(relative); // the same rules as a workspace path, under /
        }
        try {
            // the workspace by any name counts against its quota, whoever writes there
            return new Target(roots.of(root), relative, "/", relative.equals("workspace")
                    || relative.startsWith("workspace/"));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
        }
    }

    /** The largest upload or download, in bytes. */
    public long maxFileBytes() {
        return maxFileBytes;
    }

    /**
     * Writes a file (replacing it atomically), creating missing directories.
     *
     * @throws RequestException {@code file_too_large} past the cap, {@code quota_exceeded} past the quota
     */
    public void upload(String path, byte[] data) {
        if (data.length > maxFileBytes) {
            throw new RequestException(ErrorCode.FILE_TOO_LARGE, "the file has " + data.length + " bytes; uploads are capped at "
                    + maxFileBytes);
        }
        Target target = target(path);
        String file = target.file(path);
        if (target.workspace()) {
            long used = workspace.usage();
            if (used + data.length > quota) {
                throw new RequestException(ErrorCode.QUOTA_EXCEEDED, "the workspace holds " + used + " bytes; with this"
                        + " file it would pass its quota of " + quota);
            }
        } // elsewhere the session's disk (or its sandbox's memory, for /tmp) bounds what is written
        target.files().write(file, data);
    }

    public byte[] download(String path) {
        Target target = target(path);
        return target.files().read(target.file(path), maxFileBytes);
    }

    /** Lists one directory; each entry's path relative when the directory's was (as the user), else absolute. */
    public List<Workspace.Entry> list(String directory) {
        Target target = target(directory);
        List<Workspace.Entry> entries = target.files().list(target.path());
        if (target.shownAs().isEmpty()) {
            return entries;
        }
        return entries.stream().map(e -> new Workspace.Entry(target.shown(e.path()), e.type(), e.size(),
                e.modifiedMs())).toList();
    }

    public void delete(String path) {
        Target target = target(path);
        target.files().delete(target.file(path));
    }

    /**
     * The entry at {@code path} itself (a link shown, not followed), its path as it was asked for; {@code /}, the
     * workspace and any spelling of them ({@code .}, {@code ..}, {@code /workspace/..}) are directories as any other.
     */
    public Workspace.Entry stat(String path) {
        Target target = target(path);
        return target.files().stat(target.path()).at(path);
    }

    /**
     * Makes a directory and the missing ones above it.
     *
     * @return false when it was there already
     */
    public boolean makeDirectories(String path) {
        Target target = target(path);
        return !target.path().isEmpty() && target.files().makeDirectories(target.path());
    }

    /** Renames {@code from} to {@code to} (within one file system of the session's), making the directories above it. */
    public void move(String from, String to) {
        Target a = target(from);
        Target b = target(to);
        a.file(from);
        b.file(to);
        if (a.workspace() && b.workspace()) {
            workspace.move(a.path(), b.path());
            return;
        }
        Target inRoot = rooted(absolute(from));
        inRoot.files().move(inRoot.file(from), rooted(absolute(to)).file(to));
    }

    /** The absolute form of an API path, cleaned. */
    private static String absolute(String path) {
        String cleaned = clean(path);
        return cleaned.startsWith("/") ? cleaned : cleaned.isEmpty() ? WORKSPACE : WORKSPACE + "/" + cleaned;
    }

    /**
     * These files as the editing tools (Anthropic's text editor, OpenAI's apply_patch) work on them: relative paths
     * the workspace's, absolute ones anywhere in the session as its user.
     */
    public EditFiles forEditing() {
        return new EditFiles() {
            @Override
            public byte[] read(String path) {
                return download(path);
            }

            @Override
            public void write(String path, byte[] data) {
                upload(path, data);
            }

            @Override
            public void delete(String path) {
                SessionFiles.this.delete(path);
            }

            @Override
            public List<Entry> list(String path) {
                return SessionFiles.this.list(path).stream()
                        .map(e -> new Entry(e.path(), e.type().equals("directory"))).toList();
            }
        };
    }

    /** Bytes in the workspace's regular files. */
    public long usage() {
        return workspace.usage();
    }
}
