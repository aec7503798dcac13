package dev.crucible.server;

import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.exec.FileInput;
import dev.crucible.exec.InvalidRequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.LimitsSpec;
import io.javalin.http.Context;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Drop-in endpoints for clients written against other services, so they work unchanged: Piston v2
 * ({@code GET /api/v2/runtimes}, {@code POST /api/v2/execute}), SandboxFusion ({@code POST /run_code}) and Replit
 * code-exec ({@code POST /replit/eval}). Their bodies are read as JSON whatever the content type (piston-client sends
 * none); auth is the server's own (bearer token when tokens are configured).
 */
final class CompatRoutes {
    private final Executor executor;
    private final JsonMapper json;
    private final BodyBytes bodies;

    /** The server's capped body read. */
    @FunctionalInterface
    interface BodyBytes {
        byte[] read(Context ctx) throws IOException;
    }

    CompatRoutes(Executor executor, JsonMapper json, BodyBytes bodies) {
        this.executor = executor;
        this.json = json;
        this.bodies = bodies;
    }

    /** A JSON object whatever the content type (piston-client sends none). */
    private JsonNode body(Context ctx) throws IOException {
        byte[] bytes = bodies.read(ctx);
        try {
            JsonNode node = json.readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new ApiException(400, "invalid_json", "send a JSON object");
            }
            return node;
        } catch (JacksonException e) {
            throw new ApiException(400, "invalid_json", "the body is not valid JSON");
        }
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.isString() ? v.asString() : v.toString();
    }

    private static Long number(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || !v.isNumber() ? null : v.asLong();
    }

    // ---- Piston v2 ----

    /** Piston's names where they differ from ours. */
    private static String pistonName(String language) {
        return language.equals("cpp") ? "c++" : language;
    }

    void pistonRuntimes(Context ctx) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (LanguageRuntime r : executor.runtimes().list()) {
            if (!r.available()) {
                continue;
            }
            List<String> aliases = new ArrayList<>(r.aliases());
            if (!pistonName(r.language()).equals(r.language())) {
                aliases.add(r.language());
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("language", pistonName(r.language()));
            m.put("version", r.version().isEmpty() ? "0.0.0" : r.version());
            m.put("aliases", aliases);
            out.add(m);
        }
        ctx.json(out);
    }

    void pistonExecute(Context ctx) throws Exception {
        JsonNode b = body(ctx);
        String language = text(b, "language");
        if (language == null || language.isBlank()) {
            throw new ApiException(400, "invalid_request", "language is required");
        }
        language = language.equals("c++") ? "cpp" : language;
        LanguageRuntime runtime = executor.runtimeFor(language);
        String version = text(b, "version");
        if (version != null && !version.equals("*") && !version.isBlank() && !runtime.version().startsWith(version)) {
            throw new ApiException(400, "invalid_request", text(b, "language") + "-" + version
                    + " runtime is unknown; this server has " + runtime.version());
        }
        JsonNode files = b.get("files");
        if (files == null || !files.isArray() || files.isEmpty()) {
            throw new ApiException(400, "invalid_request", "files must hold at least the program");
        }
        String code = decode(files.get(0));
        List<FileInput> extra = new ArrayList<>();
        for (int i = 1; i < files.size(); i++) {
            String name = text(files.get(i), "name");
            extra.add(new FileInput(name == null ? "file" + i : name, decode(files.get(i)), null));
        }
        List<String> args = new ArrayList<>();
        if (b.has("args") && b.get("args").isArray()) {
            b.get("args").forEach(a -> args.add(a.asString()));
        }
        Long runTimeout = number(b, "run_timeout");
        Long memory = number(b, "run_memory_limit");
        LimitsSpec limits = new LimitsSpec(runTimeout != null && runTimeout > 0 ? runTimeout : null, null,
                memory != null && memory > 0 ? (int) Math.max(16, memory / (1024 * 1024)) : null, null, null);
        ExecuteResult r = executor.execute(new ExecuteRequest(language, code, text(b, "stdin"), args,
                extra.isEmpty() ? null : extra, limits));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("language", pistonName(runtime.language()));
        out.put("version", runtime.version());
        out.put("run", pistonStage(r.compile() != null && !r.compile().ok() ? null : r));
        if (r.compile() != null) {
            out.put("compile", pistonStage(r.compile()));
        }
        ctx.json(out);
    }

    private static String decode(JsonNode file) {
        String content = text(file, "content");
        if (content == null) {
            throw new ApiException(400, "invalid_request", "a file has no content");
        }
        String encoding = text(file, "encoding");
        if (encoding == null || encoding.equals("utf8")) {
            return content;
        }
        try {
            return switch (encoding) {
                case "base64" -> new String(java.util.Base64.getDecoder().decode(content), StandardCharsets.UTF_8);
                case "hex" -> new String(java.util.HexFormat.of().parseHex(content), StandardCharsets.UTF_8);
                default -> throw new ApiException(400, "invalid_request", "encoding must be utf8, base64 or hex");
            };
        } catch (IllegalArgumentException e) {
            throw new ApiException(400, "invalid_request", "a file's content is not valid " + encoding);
        }
    }

    /** Piston's stage object: stdout, stderr, output, code, signal, message, status (TO, SG, RE, OL), times. */
    private static Map<String, Object> pistonStage(ExecuteResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (r == null) { // the run stage of a program that did not compile
            m.put("stdout", "");
            m.put("stderr", "");
            m.put("output", "");
            m.put("code", null);
            m.put("signal", null);
            return m;
        }
        m.put("stdout", r.stdout());
        m.put("stderr", r.stderr());
        m.put("output", r.stdout() + r.stderr());
        m.put("code", r.signal() != null ? null : r.exitCode());
        m.put("signal", r.signal() == null ? null : signalName(r.signal()));
        m.put("message", r.message());
        m.put("status", switch (r.status()) {
            case "ok" -> null;
            case "timeout" -> "TO";
            case "output_limit" -> "OL";
            case "memory_limit" -> "SG";
            case "sandbox_error" -> "XX";
            default -> r.signal() != null ? "SG" : "RE";
        });
        m.put("cpu_time", r.cpuMs());
        m.put("wall_time", r.wallMs());
        m.put("memory", r.memoryBytes());
        return m;
    }

    private static String signalName(int signal) {
        return switch (signal) {
            case 9 -> "SIGKILL";
            case 11 -> "SIGSEGV";
            case 6 -> "SIGABRT";
            case 15 -> "SIGTERM";
            case 2 -> "SIGINT";
            case 8 -> "SIGFPE";
            case 25 -> "SIGXFSZ";
            case 24 -> "SIGXCPU";
            default -> "SIG" + signal;
        };
    }

    // ---- SandboxFusion ----

    void runCode(Context ctx) throws Exception {
        JsonNode b = body(ctx);
        String language = text(b, "language");
        String code = text(b, "code");
        if (language == null || code == null) {
            throw new ApiException(400, "invalid_request", "code and language are required");
        }
        language = switch (language.toLowerCase(Locale.ROOT)) {
            case "nodejs", "node" -> "javascript";
            case "python3" -> "python";
            default -> language;
        };
        List<FileInput> files = new ArrayList<>();
        if (b.has("files") && b.get("files").isObject()) {
            for (var e : b.get("files").properties()) {
                files.add(new FileInput(e.getKey(), e.getValue().asString(), "base64"));
            }
        }
        Double runTimeout = b.has("run_timeout") && b.get("run_timeout").isNumber() ? b.get("run_timeout").asDouble() : null;
        Long memory = number(b, "memory_limit_MB");
        LimitsSpec limits = new LimitsSpec(runTimeout == null ? 10_000L : Math.max(1, (long) (runTimeout * 1000)), null,
                memory != null && memory > 0 ? memory.intValue() : null, null, null);
        ExecuteResult r;
        try {
            r = executor.execute(new ExecuteRequest(language, code, text(b, "stdin"), null, files.isEmpty() ? null : files,
                    limits));
        } catch (InvalidRequestException e) {
            ctx.json(Map.of("status", "SandboxError", "message", e.getMessage(), "files", Map.of()));
            return;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        boolean compileFailed = r.compile() != null && !r.compile().ok();
        out.put("status", r.status().equals("sandbox_error") ? "SandboxError" : r.ok() ? "Success" : "Failed");
        out.put("message", r.message() == null ? "" : r.message());
        out.put("compile_result", r.compile() == null ? null : fusionStage(r.compile()));
        out.put("run_result", compileFailed ? null : fusionStage(r));
        out.put("executor_pod_name", "crucible");
        out.put("files", Map.of());
        ctx.json(out);
    }

    private static Map<String, Object> fusionStage(ExecuteResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("status", r.status().equals("timeout") ? "TimeLimitExceeded" : r.status().equals("sandbox_error")
                ? "Error" : "Finished");
        m.put("execution_time", r.wallMs() / 1000.0);
        m.put("return_code", r.exitCode());
        m.put("stdout", r.stdout());
        m.put("stderr", r.stderr());
        return m;
    }

    // ---- Replit code-exec ----

    /** Replit's interpreter mode: every top-level statement compiled as the REPL does, so bare expressions echo. */
    static final String INTERPRETER_MODE = """
            import ast as _a, sys as _s
            _ns = {"__name__": "__main__"}
            _src = _s.stdin.read()
            _s.stdin = open("/dev/null")
            for _node in _a.parse(_src).body:
                exec(compile(_a.Interactive([_node]), "<input>", "single"), _ns)
            """;

    void replitEval(Context ctx) throws Exception {
        JsonNode b = body(ctx);
        String code = text(b, "code");
        if (code == null) {
            throw new ApiException(400, "invalid_request", "code is required");
        }
        List<FileInput> files = new ArrayList<>();
        if (b.has("files") && b.get("files").isObject()) {
            for (var e : b.get("files").properties()) {
                files.add(new FileInput(e.getKey(), e.getValue().asString(), null));
            }
        }
        boolean interpreter = b.path("interpreter_mode").asBoolean(false);
        ExecuteRequest request = interpreter
                ? new ExecuteRequest("python", INTERPRETER_MODE, code, null, files.isEmpty() ? null : files, null)
                : new ExecuteRequest("python", code, null, null, files.isEmpty() ? null : files, null);
        ExecuteResult r = executor.execute(request);
        String text = r.stdout() + r.stderr();
        if (!r.ok() && !r.status().equals("runtime_error")) {
            text += (text.isEmpty() || text.endsWith("\n") ? "" : "\n") + "[crucible: " + r.status() + "]\n";
        }
        ctx.contentType("text/plain; charset=utf-8").result(text);
    }
}
