package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.session.workspace.Workspace;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * envd's {@code filesystem.Filesystem} service (its {@code spec/envd/filesystem/filesystem.proto}), unary calls in
 * Connect's JSON codec over the session's files API: {@code Stat}, {@code MakeDir} ({@code mkdir -p};
 * {@code already_exists} when it was there), {@code ListDir} (to a {@code depth}), {@code Move}, {@code Remove}. Watching
 * a directory is not offered ({@code unimplemented}).
 */
final class FilesystemRpc {
    /** The deepest listing asked for at once, and the most entries in it. */
    private static final int MAX_DEPTH = 16;
    private static final int MAX_ENTRIES = 10_000;

    private final Connect connect;

    FilesystemRpc(Connect connect) {
        this.connect = connect;
    }

    void call(String method, Envd.Call call, HttpServletRequest req, HttpServletResponse res) throws IOException {
        if (method.equals("WatchDir") || method.equals("CreateWatcher") || method.equals("GetWatcherEvents")
                || method.equals("RemoveWatcher")) {
            throw new Connect.Failure(Connect.Code.UNIMPLEMENTED, "watching a directory is not offered here yet");
        }
        JsonNode m = connect.unary(req);
        SessionFiles files = call.files();
        switch (method) {
            case "Stat" -> {
                String path = call.path(text(m, "path"));
                connect.answer(res, Map.of("entry", entry(files.stat(path))));
            }
            case "MakeDir" -> {
                String path = call.path(text(m, "path"));
                if (!files.makeDirectories(path)) {
                    throw new Connect.Failure(Connect.Code.ALREADY_EXISTS, "directory " + path + " already exists");
                }
                connect.answer(res, Map.of("entry", entry(files.stat(path))));
            }
            case "ListDir" -> {
                String path = call.path(text(m, "path"));
                int depth = m.has("depth") && m.get("depth").canConvertToInt() ? m.get("depth").asInt() : 1;
                if (depth < 1 || depth > MAX_DEPTH) {
                    throw new Connect.Failure(Connect.Code.INVALID_ARGUMENT, "depth is 1 to " + MAX_DEPTH);
                }
                if (!files.stat(path).type().equals("directory")) {
                    throw new Connect.Failure(Connect.Code.INVALID_ARGUMENT, "path " + path + " is not a directory");
                }
                List<Map<String, Object>> entries = new ArrayList<>();
                list(files, path, depth, entries);
                connect.answer(res, Map.of("entries", entries));
            }
            case "Move" -> {
                String from = call.path(text(m, "source"));
                String to = call.path(text(m, "destination"));
                files.move(from, to);
                connect.answer(res, Map.of("entry", entry(files.stat(to))));
            }
            case "Remove" -> {
                files.delete(call.path(text(m, "path")));
                connect.answer(res, Map.of());
            }
            default -> throw new Connect.Failure(Connect.Code.UNIMPLEMENTED, "filesystem.Filesystem has no " + method);
        }
    }

    private void list(SessionFiles files, String dir, int depth, List<Map<String, Object>> into) {
        for (Workspace.Entry e : files.list(dir)) {
            if (into.size() >= MAX_ENTRIES) {
                throw new Connect.Failure(Connect.Code.RESOURCE_EXHAUSTED, "more than " + MAX_ENTRIES
                        + " entries; list less deep");
            }
            into.add(entry(e));
            if (depth > 1 && e.type().equals("directory")) {
                list(files, e.path(), depth - 1, into);
            }
        }
    }

    /** An {@code EntryInfo} in proto3 JSON: camelCase, int64 as a string, the enum by name. */
    static Map<String, Object> entry(Workspace.Entry e) {
        Map<String, Object> m = new LinkedHashMap<>();
        String path = e.path();
        m.put("name", path.equals("/") ? "/" : path.substring(path.lastIndexOf('/') + 1));
        m.put("type", switch (e.type()) {
            case "file" -> "FILE_TYPE_FILE";
            case "directory" -> "FILE_TYPE_DIRECTORY";
            case "symlink" -> "FILE_TYPE_SYMLINK";
            default -> "FILE_TYPE_UNSPECIFIED";
        });
        m.put("path", path);
        m.put("size", Long.toString(e.size()));
        m.put("mode", e.mode() & 07777);
        m.put("permissions", permissions(e));
        String owner = e.uid() == 0 || e.uid() >= (1L << 31) ? "root" : "user";
        m.put("owner", owner);
        m.put("group", owner);
        m.put("modifiedTime", Instant.ofEpochMilli(e.modifiedMs()).toString());
        if (e.target() != null) {
            m.put("symlinkTarget", e.target());
        }
        return m;
    }

    /** As Go's {@code FileMode.String()} writes it (envd's): {@code drwxr-xr-x}, {@code -rw-r--r--}, {@code Lrwxrwxrwx}. */
    private static String permissions(Workspace.Entry e) {
        StringBuilder s = new StringBuilder(switch (e.type()) {
            case "directory" -> "d";
            case "symlink" -> "L";
            default -> "-";
        });
        String rwx = "rwxrwxrwx";
        for (int i = 0; i < 9; i++) {
            s.append((e.mode() & (1 << (8 - i))) != 0 ? rwx.charAt(i) : '-');
        }
        return s.toString();
    }

    private static String text(JsonNode m, String field) {
        JsonNode v = m.get(field);
        if (v == null || !v.isString()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, field + " is required as a string");
        }
        return v.asString();
    }
}
