package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.WorkspacePaths;
import dev.crucible.server.http.Download;
import dev.crucible.server.http.JsonObject;
import dev.crucible.session.SessionManager;
import dev.crucible.session.workspace.SessionFiles;
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.Part;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import tools.jackson.databind.json.JsonMapper;

/**
 * envd, E2B's in-sandbox daemon, as Crucible answers for it: {@code /health} (204 while the sandbox lives, 502
 * after), {@code /files} (download; upload as multipart or raw bytes), and the Connect services {@code
 * filesystem.Filesystem} ({@link FilesystemRpc}) and {@code process.Process} ({@link ProcessRpc}). Paths resolve as
 * envd's do: relative to the user's home ({@code /home/user} in a session with a root of its own, else {@code
 * /workspace}), {@code ..} cleaned away lexically and never above {@code /}; the session's files API does the rest,
 * inside the sandbox's root. The user is {@code ?username=} or the {@code Authorization: Basic} name: {@code user}
 * (the default) or {@code root}.
 */
final class Envd {
    private final E2bApi api;
    private final SessionManager sessions;
    private final Connect connect;
    private final FilesystemRpc filesystem;
    private final ProcessRpc process;

    Envd(E2bApi api, SessionManager sessions, JsonMapper json) {
        this.api = api;
        this.sessions = sessions;
        this.connect = new Connect(json);
        this.filesystem = new FilesystemRpc(connect);
        this.process = new ProcessRpc(sessions, connect);
    }

    /**
     * The user's home in a new sandbox: {@code /home/user} where the session has one, else its workspace. A session
     * with a root of its own was made with it (known from its record, its sandbox untouched: a create pays nothing
     * for it); any other (an image's, the host's file system) is asked through its files.
     */
    static String homeOf(SessionManager sessions, String owner, String id) {
        try {
            if (sessions.ownRoot(owner, id)) {
                return "/home/user";
            }
            return sessions.files(owner, id).stat("/home/user").type().equals("directory") ? "/home/user" : "/workspace";
        } catch (RequestException e) {
            return "/workspace";
        }
    }

    void serve(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String path = req.getRequestURI();
        if (path.equals("/health")) {
            health(req, res);
            return;
        }
        E2bSandboxes.Sandbox s = api.sandboxOf(req, true);
        Call call = new Call(s, user(req), sessions);
        if (path.startsWith("/filesystem.Filesystem/") || path.startsWith("/process.Process/")) {
            try {
                if (!req.getMethod().equals("POST")) {
                    throw new Connect.Failure(Connect.Code.UNIMPLEMENTED, "Connect calls are POSTs");
                }
                if (path.startsWith("/filesystem.Filesystem/")) {
                    filesystem.call(path.substring(23), call, req, res);
                } else {
                    process.call(path.substring(17), call, req, res);
                }
            } catch (RequestException e) {
                fail(res, Connect.of(e));
            } catch (Connect.Failure f) {
                fail(res, f);
            }
            return;
        }
        if (!path.equals("/files")) {
            throw new RequestException(ErrorCode.NOT_FOUND, "envd has no " + path + " here");
        }
        switch (req.getMethod()) {
            case "GET" -> {
                String file = call.path(req.getParameter("path"));
                byte[] data = call.files().download(file);
                res.setStatus(200);
                Download.fence(res, file);
                res.setContentLengthLong(data.length);
                res.getOutputStream().write(data);
            }
            case "POST" -> upload(req, res, call);
            default -> throw new RequestException(ErrorCode.METHOD_NOT_ALLOWED, req.getMethod() + " /files");
        }
    }

    private void fail(HttpServletResponse res, Connect.Failure f) throws IOException {
        if (!res.isCommitted()) {
            connect.fail(res, f);
        }
    }

    private void health(HttpServletRequest req, HttpServletResponse res) throws IOException {
        try {
            api.sandboxOf(req, false);
            res.setStatus(204);
        } catch (RequestException e) {
            if (e.code() == ErrorCode.UNAUTHORIZED) {
                throw e;
            }
            api.error(res, 502, "the sandbox is not running: " + e.getMessage());
        }
    }

    /** {@code POST /files}: each multipart part named {@code file} (its file name the path when no {@code ?path=}). */
    private void upload(HttpServletRequest req, HttpServletResponse res, Call call) throws IOException {
        String asked = req.getParameter("path");
        List<Map<String, Object>> written = new ArrayList<>();
        String type = req.getContentType() == null ? "" : req.getContentType().toLowerCase(Locale.ROOT);
        long cap = call.files().maxFileBytes();
        if (type.startsWith("multipart/form-data")) {
            // every part spooled to disk (none held in memory), the whole request at most four files' worth
            req.setAttribute("org.eclipse.jetty.multipartConfig", new MultipartConfigElement(
                    System.getProperty("java.io.tmpdir"), cap, 4L * cap, 0));
            List<Part> parts;
            try {
                parts = new ArrayList<>(req.getParts());
            } catch (ServletException | IllegalStateException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "the multipart body cannot be read: "
                        + e.getMessage());
            }
            try {
                for (Part part : parts) {
                    if ("file".equals(part.getName())) {
                        written.add(write(call, asked, part, cap));
                    }
                }
            } finally {
                for (Part part : parts) {
                    part.delete();
                }
            }
        } else {
            String path = call.path(asked);
            byte[] data = req.getInputStream().readNBytes((int) Math.min(Integer.MAX_VALUE - 8, cap + 1));
            if ("gzip".equalsIgnoreCase(req.getHeader("Content-Encoding"))) {
                try (var in = new GZIPInputStream(new ByteArrayInputStream(data))) {
                    data = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, cap + 1));
                }
            }
            call.files().upload(path, data);
            written.add(entry(path));
        }
        if (written.isEmpty()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "no file part in the upload (a multipart part named"
                    + " \"file\")");
        }
        res.setStatus(200);
        res.setContentType("application/json");
        res.getOutputStream().write(api.json().writeValueAsBytes(written));
    }

    /** One part written: at {@code ?path=} when given, else at the part's file name. */
    private static Map<String, Object> write(Call call, String asked, Part part, long cap) throws IOException {
        String path = call.path(asked != null && !asked.isEmpty() ? asked : part.getSubmittedFileName());
        if (part.getSize() > cap) {
            throw new RequestException(ErrorCode.FILE_TOO_LARGE, "'" + path + "' has " + part.getSize()
                    + " bytes; uploads are capped at " + cap);
        }
        try (var in = part.getInputStream()) {
            call.files().upload(path, in.readAllBytes());
        }
        return entry(path);
    }

    private static Map<String, Object> entry(String path) {
        return JsonObject.of("name", path.substring(path.lastIndexOf('/') + 1), "path", path, "type", "file");
    }

    /** The user a call acts as: {@code ?username=}, else the name of {@code Authorization: Basic}, else user. */
    static String user(HttpServletRequest req) {
        String name = req.getParameter("username");
        String authorization = req.getHeader("Authorization");
        if ((name == null || name.isEmpty()) && authorization != null
                && authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            try {
                String decoded = new String(Base64.getDecoder().decode(authorization.substring(6).strip()),
                        StandardCharsets.UTF_8);
                name = decoded.contains(":") ? decoded.substring(0, decoded.indexOf(':')) : decoded;
            } catch (IllegalArgumentException e) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "Authorization: Basic is not base64");
            }
        }
        if (name == null || name.isEmpty() || name.equals("user")) {
            return "user";
        }
        if (name.equals("root")) {
            return "root";
        }
        throw new RequestException(ErrorCode.INVALID_REQUEST, "user '" + name.replaceAll("\\p{Cntrl}", "?")
                + "' is not one of this sandbox's: user or root");
    }

    /** One data-plane call: its sandbox, and the user it acts as. */
    record Call(E2bSandboxes.Sandbox sandbox, String user, SessionManager sessions) {
        /** An absolute, cleaned path: relative ones are the home's. */
        String path(String path) {
            String home = sandbox.home() == null ? "/workspace" : sandbox.home();
            String p = path == null || path.isEmpty() || path.equals("~") ? home
                    : path.startsWith("~/") ? home + path.substring(1) : path.startsWith("/") ? path : home + "/" + path;
            return WorkspacePaths.cleanAbsolute(p); // '..' at / stays at /
        }

        SessionFiles files() {
            return sessions.files(sandbox.owner(), sandbox.id()).as(user);
        }
    }
}
