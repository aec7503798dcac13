package dev.crucible.server.compat;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.exec.FileInput;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Verdict;
import dev.crucible.server.http.JsonObject;
import io.javalin.http.Context;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
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
 * none); auth is the server's own (bearer token when tokens are configured). Handlers only: the server's route table
 * registers them.
 */
public final class CompatRoutes {
    private final Executor executor;
    private final JsonMapper json;
    private final BodyBytes bodies;

    /** The server's capped body read. */
    @FunctionalInterface
    public interface BodyBytes {
        byte[] read(Context ctx) throws IOException;
    }

    /** A turn of the server's admission for a run of the caller's ({@code Admission.enter(owner, timeoutMs)}). */
    @FunctionalInterface
    public interface Turns {
        AutoCloseable enter(Context ctx, ExecuteRequest request) throws InterruptedException;
    }

    private final Turns turns;

    /** @param turns how each run takes its turn: as {@code /v1/execute}'s do, fairly between tokens */
    public CompatRoutes(Executor executor, JsonMapper json, BodyBytes bodies, Turns turns) {
        this.executor = executor;
        this.json = json;
        this.bodies = bodies;
        this.turns = turns;
    }

    /** A JSON object whatever the content type (piston-client sends none). */
    private JsonNode body(Context ctx) throws IOException {
        byte[] bytes = bodies.read(ctx);
        try {
            JsonNode node = json.readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new RequestException(ErrorCode.INVALID_JSON, "send a JSON object");
            }
            return node;
        } catch (JacksonException e) {
            throw new RequestException(ErrorCode.INVALID_JSON, "the body is not valid JSON");
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

    public void pistonRuntimes(Context ctx) {
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

    /**
     * Piston v2's execute, as its own api/src/api/v2.js validates and api/src/job.js runs it: the program is the first
     * utf8 file under its own name (the runtime's file name when it has none), the other files keep theirs ({@code
     * file<i>.code} when unnamed), no {@code run} after a failed compile, {@code output} is stdout and stderr in the
     * order written. Errors are Piston's {@code {"message": …}} bodies (see {@code CrucibleServer}).
     */
    @SuppressWarnings("checkstyle:JavaNCSS") // Piston's request read field by field, as its own server reads it
    public void pistonExecute(Context ctx) throws Exception {
        JsonNode b = body(ctx);
        JsonNode lang = b.get("language");
        if (lang == null || !lang.isString() || lang.asString().isEmpty()) {
            throw piston("language is required as a string");
        }
        JsonNode ver = b.get("version");
        if (ver == null || !ver.isString() || ver.asString().isEmpty()) {
            throw piston("version is required as a string");
        }
        JsonNode files = b.get("files");
        if (files == null || !files.isArray()) {
            throw piston("files is required as an array");
        }
        for (int i = 0; i < files.size(); i++) {
            JsonNode content = files.get(i).get("content");
            if (content == null || !content.isString()) {
                throw piston("files[" + i + "].content is required as a string");
            }
        }
        String language = lang.asString().equals("c++") ? "cpp" : lang.asString();
        String version = ver.asString();
        LanguageRuntime runtime;
        try {
            runtime = executor.runtimeFor(language);
        } catch (RequestException e) {
            throw piston(lang.asString() + "-" + version + " runtime is unknown");
        }
        if (!version.equals("*") && !version.equals("x") && !runtime.version().startsWith(version.replaceAll("\\.x$", ""))) {
            throw piston(lang.asString() + "-" + version + " runtime is unknown");
        }
        int program = -1;
        for (int i = 0; i < files.size() && program < 0; i++) {
            String encoding = text(files.get(i), "encoding");
            if (encoding == null || encoding.equals("utf8")) {
                program = i;
            }
        }
        if (program < 0) {
            throw piston("files must include at least one utf8 encoded file");
        }
        for (String stage : List.of("compile", "run")) {
            for (String constraint : List.of("memory_limit", "timeout", "cpu_time")) {
                String name = stage + "_" + constraint;
                JsonNode v = b.get(name);
                if (v == null || v.isNull() || (v.isNumber() && v.asDouble() == 0) || (v.isString() && v.asString().isEmpty())
                        || (v.isBoolean() && !v.asBoolean())) {
                    continue; // Piston skips what is falsy
                }
                if (!v.isNumber()) {
                    throw piston("If specified, " + name + " must be a number");
                }
                // -1 is Piston's documented "no limit" for memory (piston-client sends it by default): our maximum
                if (v.asDouble() < 0 && !(constraint.equals("memory_limit") && v.asDouble() == -1)) {
                    throw piston(name + " must be non-negative");
                }
            }
        }
        String code = decode(files.get(program));
        String programName = text(files.get(program), "name");
        List<FileInput> extra = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            if (i != program) {
                String name = text(files.get(i), "name");
                extra.add(new FileInput(name == null || name.isEmpty() ? "file" + i + ".code" : name,
                        decode(files.get(i)), null));
            }
        }
        List<String> args = new ArrayList<>();
        if (b.has("args") && b.get("args").isArray()) {
            b.get("args").forEach(a -> args.add(a.isString() ? a.asString() : a.toString()));
        }
        Long runTimeout = number(b, "run_timeout");
        Long memory = number(b, "run_memory_limit");
        LimitsSpec limits = new LimitsSpec(runTimeout != null && runTimeout > 0 ? runTimeout : null, null,
                memory != null && memory > 0 ? (int) Math.max(16, memory / (1024 * 1024)) : null, null, null);
        Interleaved output = new Interleaved();
        ExecuteRequest request = new ExecuteRequest(language, code, text(b, "stdin"), args,
                extra.isEmpty() ? null : extra, limits);
        ExecuteResult r;
        try (AutoCloseable turn = turns.enter(ctx, request)) {
            r = executor.executeNamed(request, programName == null || programName.isEmpty() ? null : programName,
                    output);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        if (r.compile() != null) {
            out.put("compile", pistonStage(r.compile(), null));
        }
        if (r.compile() == null || r.compile().ok()) { // Piston runs nothing after a failed compile
            out.put("run", pistonStage(r, output.text()));
        }
        out.put("language", pistonName(runtime.language()));
        out.put("version", runtime.version());
        ctx.json(out);
    }

    private static RequestException piston(String message) {
        return new RequestException(ErrorCode.INVALID_REQUEST, message);
    }

    /** stdout and stderr in the order the program wrote them, as Piston's {@code output} (bounded). */
    private static final class Interleaved implements OutputListener {
        private static final int CAP = 32 * 1024 * 1024;
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        @Override
        public synchronized void chunk(boolean stderr, byte[] data, int length) {
            bytes.write(data, 0, Math.max(0, Math.min(length, CAP - bytes.size())));
        }

        synchronized String text() {
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }

    /** A file's content in Piston's encodings; an unknown encoding is utf8, as Piston's Job takes it. */
    private static String decode(JsonNode file) {
        String content = text(file, "content");
        String encoding = text(file, "encoding");
        try {
            return switch (encoding == null ? "utf8" : encoding) {
                case "base64" -> new String(Base64.getMimeDecoder().decode(content), StandardCharsets.UTF_8);
                case "hex" -> new String(HexFormat.of().parseHex(content), StandardCharsets.UTF_8);
                default -> content;
            };
        } catch (IllegalArgumentException e) {
            throw piston("a file's content is not valid " + encoding);
        }
    }

    /** Piston's stage object: stdout, stderr, output, code, signal, message, status (TO, SG, RE, OL, EL, XX), times. */
    private static Map<String, Object> pistonStage(ExecuteResult r, String interleaved) {
        Map<String, Object> m = new LinkedHashMap<>();
        String status = switch (r.status()) {
            case OK -> null;
            case TIMEOUT -> "TO";
            case OUTPUT_LIMIT -> r.stderrTruncated() && !r.stdoutTruncated() ? "EL" : "OL";
            case MEMORY_LIMIT -> "SG";
            case SANDBOX_ERROR -> "XX";
            case RUNTIME_ERROR, COMPILE_ERROR -> r.signal() != null ? "SG" : "RE";
        };
        m.put("stdout", r.stdout());
        m.put("stderr", r.stderr());
        m.put("output", interleaved != null && !interleaved.isEmpty() ? interleaved : r.stdout() + r.stderr());
        boolean killed = status != null && List.of("TO", "OL", "EL").contains(status);
        m.put("code", r.signal() != null || killed ? null : r.exitCode());
        m.put("signal", killed ? "SIGKILL" : r.signal() == null ? null : signalName(r.signal()));
        m.put("message", "OL".equals(status) ? "stdout length exceeded" : "EL".equals(status) ? "stderr length exceeded"
                : r.message());
        m.put("status", status);
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

    public void runCode(Context ctx) throws Exception {
        JsonNode b = body(ctx);
        String language = text(b, "language");
        String code = text(b, "code");
        if (language == null || code == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code and language are required");
        }
        language = switch (language.toLowerCase(Locale.ROOT)) {
            case "nodejs", "node" -> "javascript";
            case "python3" -> "python";
            default -> language;
        };
        List<FileInput> files = new ArrayList<>();
        if (b.has("files") && b.get("files").isObject()) {
            for (var e : b.get("files").properties()) {
                files.add(new FileInput(e.getKey(), e.getValue().asString(), FileInput.Encoding.BASE64));
            }
        }
        Double runTimeout = b.has("run_timeout") && b.get("run_timeout").isNumber() ? b.get("run_timeout").asDouble() : null;
        Long memory = number(b, "memory_limit_MB");
        LimitsSpec limits = new LimitsSpec(runTimeout == null ? 10_000L : Math.max(1, (long) (runTimeout * 1000)), null,
                memory != null && memory > 0 ? memory.intValue() : null, null, null);
        ExecuteResult r;
        ExecuteRequest request = new ExecuteRequest(language, code, text(b, "stdin"), null,
                files.isEmpty() ? null : files, limits);
        try (AutoCloseable turn = turns.enter(ctx, request)) {
            r = executor.execute(request);
        } catch (RequestException e) {
            if (e.retryAfterSeconds() > 0) { // the server is busy: the caller's answer is to come back, not a verdict
                throw e;
            }
            ctx.json(JsonObject.of("status", "SandboxError", "message", e.getMessage(), "files", Map.of()));
            return;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        boolean compileFailed = r.compile() != null && !r.compile().ok();
        out.put("status", r.status() == Verdict.SANDBOX_ERROR ? "SandboxError" : r.ok() ? "Success" : "Failed");
        out.put("message", r.message() == null ? "" : r.message());
        out.put("compile_result", r.compile() == null ? null : fusionStage(r.compile()));
        out.put("run_result", compileFailed ? null : fusionStage(r));
        out.put("executor_pod_name", "crucible");
        out.put("files", Map.of());
        ctx.json(out);
    }

    private static Map<String, Object> fusionStage(ExecuteResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("status", r.status() == Verdict.TIMEOUT ? "TimeLimitExceeded" : r.status() == Verdict.SANDBOX_ERROR
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

    public void replitEval(Context ctx) throws Exception {
        JsonNode b = body(ctx);
        String code = text(b, "code");
        if (code == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
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
        ExecuteResult r;
        try (AutoCloseable turn = turns.enter(ctx, request)) {
            r = executor.execute(request);
        }
        String text = r.stdout() + r.stderr();
        if (!r.ok() && r.status() != Verdict.RUNTIME_ERROR) {
            text += (text.isEmpty() || text.endsWith("\n") ? "" : "\n") + "[crucible: " + r.status().wireName() + "]\n";
        }
        ctx.contentType("text/plain; charset=utf-8").result(text);
    }
}
