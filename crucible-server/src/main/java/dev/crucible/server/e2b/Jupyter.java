package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.server.http.JsonObject;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.CellStatus;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The code interpreter's API (E2B's {@code template/server}): {@code POST /execute} runs a cell in the sandbox's
 * session and answers E2B's NDJSON lines ({@code number_of_executions}, {@code stdout}/{@code stderr} with a {@code
 * timestamp}, {@code result} with its MIME bundle from the cell's displays and value, {@code error}, {@code
 * end_of_execution}); {@code /contexts} lists the one context a sandbox has, its session's interpreter (more are not
 * offered yet: creating one answers 501).
 */
final class Jupyter {
    /** The one context of a sandbox: its session's own interpreter. */
    static final String DEFAULT_CONTEXT = "default";
    private static final Map<String, String> MIME = Map.ofEntries(Map.entry("text/plain", "text"),
            Map.entry("text/html", "html"), Map.entry("text/markdown", "markdown"), Map.entry("image/svg+xml", "svg"),
            Map.entry("image/png", "png"), Map.entry("image/jpeg", "jpeg"), Map.entry("application/pdf", "pdf"),
            Map.entry("text/latex", "latex"), Map.entry("application/json", "json"),
            Map.entry("application/javascript", "javascript"));

    private final E2bApi api;
    private final SessionManager sessions;
    private final Contexts contexts;
    private final JsonMapper json;

    Jupyter(E2bApi api, SessionManager sessions, Contexts contexts, JsonMapper json) {
        this.api = api;
        this.sessions = sessions;
        this.contexts = contexts;
        this.json = json;
    }

    void serve(HttpServletRequest req, HttpServletResponse res) throws IOException {
        String path = req.getRequestURI();
        String method = req.getMethod();
        if (path.equals("/health")) {
            api.sandboxOf(req, false);
            api.write(res, 200, Map.of("status", "ok"));
            return;
        }
        E2bSandboxes.Sandbox s = path.equals("/execute") ? api.sandboxOf(req, true) : api.sandboxOfContexts(req);
        String language = s.language();
        try {
            if (path.equals("/execute") && method.equals("POST")) {
                execute(s, language, api.body(req, 16 << 20), res);
            } else if (path.equals("/contexts") && method.equals("GET")) {
                List<Map<String, Object>> all = new ArrayList<>(List.of(context(language, s.home())));
                contexts.list(s).forEach(c -> all.add(c.json()));
                api.write(res, 200, all);
            } else if (path.equals("/contexts") && method.equals("POST")) {
                JsonNode b = api.body(req, 1 << 20);
                api.write(res, 200, contexts.create(s, b.path("language").asString("python"),
                        b.path("cwd").asString(null)).json());
            } else if (path.matches("/contexts/[^/]+(/restart)?")) {
                context(s, path.split("/")[2], method, path.endsWith("/restart"), res);
            } else {
                throw new RequestException(ErrorCode.NOT_FOUND, "the code interpreter has no " + method + " " + path);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted");
        }
    }

    /** {@code DELETE /contexts/{id}} or {@code POST /contexts/{id}/restart}. */
    private void context(E2bSandboxes.Sandbox s, String id, String method, boolean restart, HttpServletResponse res)
            throws IOException, InterruptedException {
        boolean first = id.equals(DEFAULT_CONTEXT);
        Contexts.Context c = first ? null : contexts.get(s, id).orElseThrow(() -> new RequestException(
                ErrorCode.NOT_FOUND, "no context " + id.replaceAll("[^A-Za-z0-9_-]", "?")));
        if (method.equals("POST") && restart) {
            if (first) {
                sessions.restart(s.owner(), s.id());
            } else {
                contexts.restart(s, c);
            }
        } else if (method.equals("DELETE") && !restart) {
            if (first) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "the default context lives as long as its"
                        + " sandbox; restart it instead");
            }
            contexts.remove(c);
        } else {
            throw new RequestException(ErrorCode.METHOD_NOT_ALLOWED, method + " on a context");
        }
        api.write(res, 200, Map.of());
    }

    private void execute(E2bSandboxes.Sandbox s, String language, JsonNode b, HttpServletResponse res)
            throws IOException, InterruptedException {
        if (!b.path("code").isString()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required as a string");
        }
        String context = b.path("context_id").asString(null);
        String asked = b.path("language").asString(null);
        if (context != null && asked != null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "give context_id or language, not both");
        }
        Contexts.Context c = null;
        if (context != null && !context.equals(DEFAULT_CONTEXT)) {
            c = contexts.get(s, context).orElseThrow(() -> new RequestException(ErrorCode.NOT_FOUND, "no context "
                    + context.replaceAll("[^A-Za-z0-9_-]", "?")));
        } else if (asked != null && !sameLanguage(asked, language)) {
            c = contexts.forLanguage(s, asked);
        }
        String cellLanguage = c == null ? language : c.language;
        Map<String, String> env = new LinkedHashMap<>();
        b.path("env_vars").properties().forEach(e -> env.put(e.getKey(), e.getValue().asString()));
        String code = b.get("code").asString();
        if (!env.isEmpty() && !Environment.perCell(cellLanguage)) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "env_vars for one execution are offered in Python and"
                    + " JavaScript contexts; a " + cellLanguage + " one takes the sandbox's envs");
        }
        CellResult r;
        if (!env.isEmpty()) {
            run(s, c, Environment.set(cellLanguage, env));
        }
        try {
            r = run(s, c, code);
        } finally {
            if (!env.isEmpty()) {
                run(s, c, Environment.restore(cellLanguage));
            }
        }
        res.setStatus(200);
        res.setContentType("application/x-ndjson");
        OutputStream out = res.getOutputStream();
        String now = Instant.now().toString();
        line(out, JsonObject.of("type", "number_of_executions", "execution_count", r.executionCount()));
        if (r.stdout() != null && !r.stdout().isEmpty()) {
            line(out, JsonObject.of("type", "stdout", "text", r.stdout(), "timestamp", now));
        }
        if (r.stderr() != null && !r.stderr().isEmpty()) {
            line(out, JsonObject.of("type", "stderr", "text", r.stderr(), "timestamp", now));
        }
        if (r.display() != null) {
            for (CellResult.Display d : r.display()) {
                String key = MIME.get(d.mime());
                if (key != null) {
                    Map<String, Object> result = new LinkedHashMap<>(JsonObject.of("type", "result", "is_main_result", false,
                            "extra", Map.of()));
                    result.put(key, key.equals("json") ? json.readTree(d.data()) : d.data());
                    line(out, result);
                }
            }
        }
        if (r.result() != null) {
            line(out, JsonObject.of("type", "result", "text", r.result(), "is_main_result", true, "extra", Map.of()));
        }
        if (r.error() != null) {
            line(out, JsonObject.of("type", "error", "name", r.error().name() == null ? "Error" : r.error().name(),
                    "value", r.error().message() == null ? "" : r.error().message(),
                    "traceback", r.error().traceback() == null ? "" : r.error().traceback()));
        } else if (r.status() != CellStatus.OK) {
            line(out, JsonObject.of("type", "error", "name", r.status().name(), "value", "the cell ended: " + r.status(),
                    "traceback", ""));
        }
        line(out, Map.of("type", "end_of_execution"));
    }

    /** One cell in the sandbox's first context (its session's interpreter) or in context {@code c}. */
    private CellResult run(E2bSandboxes.Sandbox s, Contexts.Context c, String code) throws InterruptedException {
        long timeout = s.limits().timeoutMs();
        return c == null ? sessions.execute(s.owner(), s.id(), code, null, null) : contexts.execute(s, c, code, timeout);
    }

    private static boolean sameLanguage(String asked, String language) {
        String a = asked.toLowerCase(Locale.ROOT);
        return a.equals(language) || (a.equals("js") && language.equals("javascript"));
    }

    private void line(OutputStream out, Object message) throws IOException {
        out.write(json.writeValueAsBytes(message));
        out.write('\n');
        out.flush();
    }

    private static Map<String, Object> context(String language, String cwd) {
        return JsonObject.of("id", DEFAULT_CONTEXT, "language", language, "cwd", cwd == null ? "/workspace" : cwd);
    }
}
