package dev.crucible.server.e2b.template;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.image.build.ImageBuilder;
import dev.crucible.image.store.ImageStore;
import dev.crucible.sandbox.Sandbox;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * E2B's template API on Crucible's E2B control plane, per token (docs/e2b.md): {@code POST /v3/templates} (a template
 * by name, and a new build), {@code GET /templates/{id}/files/{hash}} (present, else an upload URL this server serves:
 * {@code PUT /templates/uploads/{secret}}), {@code POST /v2/templates/{id}/builds/{build}} (queued: one build at a
 * time, {@value #QUEUED} waiting, then 429), {@code GET /templates/{id}/builds/{build}/status} (log entries from
 * {@code logsOffset}, a failure's step and reason), {@code GET /templates/aliases/{alias}}, tags ({@code POST}/
 * {@code DELETE /templates/tags}, {@code GET /templates/{id}/tags}), {@code GET /templates}, {@code GET}/
 * {@code DELETE /templates/{id}}. Refusals are {@link RequestException}s the E2B filter answers in E2B's shape.
 * Templates are kept in memory (their images in the store): a restarted server has none. Thread-safe.
 */
public final class TemplateApi implements AutoCloseable {
    static final int QUEUED = 16;
    private static final Pattern FILES = Pattern.compile("^/templates/([^/]+)/files/([^/]+)$");
    private static final Pattern UPLOAD = Pattern.compile("^/templates/uploads/([0-9a-f]{64})$");
    private static final Pattern START = Pattern.compile("^/v2/templates/([^/]+)/builds/([^/]+)$");
    private static final Pattern STATUS = Pattern.compile("^/templates/([^/]+)/builds/([^/]+)/status$");
    private static final Pattern ALIAS = Pattern.compile("^/templates/aliases/([^/]+)$");
    private static final Pattern TAGS = Pattern.compile("^/templates/([^/]+)/tags$");
    private static final Pattern ONE = Pattern.compile("^(?:/v2)?/templates/([^/]+)$");

    private final JsonMapper json;
    private final ImageStore store;
    private final ImageBuilder builder;
    private final Templates templates = new Templates();
    private final Uploads uploads;
    private final Path scratch;
    private final ThreadPoolExecutor builds;
    private final BuildCache cache;

    /**
     * @param dataDir the server's data directory: uploads under {@code e2b/template-files}, builds' contexts under
     *     {@code e2b/template-builds}
     */
    public TemplateApi(Path dataDir, JsonMapper json, ImageStore store, Sandbox sandbox) throws IOException {
        this.json = json;
        this.store = store;
        this.builder = new ImageBuilder(store, sandbox, ImageBuilder.Options.defaults());
        this.uploads = new Uploads(dataDir.resolve("e2b/template-files"));
        this.scratch = Files.createDirectories(dataDir.resolve("e2b/template-builds"));
        this.cache = new BuildCache(store, json);
        this.builds = new ThreadPoolExecutor(1, 1, 1, TimeUnit.MINUTES, new ArrayBlockingQueue<>(QUEUED), r -> {
            Thread t = new Thread(r, "e2b-template-build");
            t.setDaemon(true);
            return t;
        });
    }

    /** Whether {@code path} is this API's. */
    public static boolean serves(String path) {
        return path.equals("/templates") || path.startsWith("/templates/") || path.startsWith("/v2/templates")
                || path.startsWith("/v3/templates");
    }

    /**
     * The image a sandbox of the owner's template {@code idOrAlias} ({@code name}, {@code name:tag} or its id) runs
     * in, when the owner has one built; empty for every other name (E2B's own, the operator's).
     */
    public Optional<String> imageOf(String owner, String idOrAlias) {
        String tag = idOrAlias.contains(":") ? idOrAlias.substring(idOrAlias.indexOf(':') + 1) : null;
        return templates.find(owner, idOrAlias).flatMap(t -> t.image(tag));
    }

    /** Serves one call; {@code owner} checks the caller's token (not asked for an upload, whose URL is its grant). */
    public void serve(HttpServletRequest req, HttpServletResponse res, Supplier<String> owner) throws IOException {
        String path = req.getRequestURI();
        String method = req.getMethod();
        Matcher m;
        if ((m = UPLOAD.matcher(path)).matches() && method.equals("PUT")) {
            uploads.receive(m.group(1), req.getInputStream());
            res.setStatus(200);
            return;
        }
        String who = owner.get();
        if (path.equals("/v3/templates") && method.equals("POST")) {
            request(req, res, who);
        } else if ((m = FILES.matcher(path)).matches() && method.equals("GET")) {
            Templates.Template t = templates.require(who, m.group(1));
            ObjectNode answer = json.createObjectNode();
            if (uploads.file(t.owner, m.group(2)) != null) {
                answer.put("present", true);
            } else {
                String base = req.getScheme() + "://" + req.getHeader("Host");
                answer.put("present", false).put("url", base + "/templates/uploads/" + uploads.grant(who, m.group(2)));
            }
            write(res, 201, answer);
        } else if ((m = START.matcher(path)).matches() && method.equals("POST")) {
            start(req, res, who, m.group(1), m.group(2));
        } else if ((m = STATUS.matcher(path)).matches() && method.equals("GET")) {
            status(req, res, who, m.group(1), m.group(2));
        } else if ((m = ALIAS.matcher(path)).matches() && method.equals("GET")) {
            String alias = m.group(1); // a template whose builds all failed is not there yet: Harbor builds it then
            Templates.Template t = templates.find(who, alias).filter(x -> imageOf(who, alias).isPresent())
                    .orElseThrow(() -> new RequestException(ErrorCode.NOT_FOUND, "template '" + alias + "' not found"));
            write(res, 200, json.createObjectNode().put("templateID", t.id).put("public", false));
        } else if (path.equals("/templates/tags")) {
            tags(req, res, who, method);
        } else if ((m = TAGS.matcher(path)).matches() && method.equals("GET")) {
            Templates.Template t = templates.require(who, m.group(1));
            ArrayNode list = json.createArrayNode();
            synchronized (t) {
                t.tags.forEach((tag, build) -> list.addObject().put("tag", tag).put("buildID", build)
                        .put("createdAt", t.builds.get(build).created.toString()));
            }
            write(res, 200, list);
        } else if (path.equals("/templates") && method.equals("GET")) {
            ArrayNode list = json.createArrayNode();
            templates.of(who).forEach(t -> list.add(describe(t)));
            write(res, 200, list);
        } else if ((m = ONE.matcher(path)).matches() && method.equals("GET")) {
            write(res, 200, describe(templates.require(who, m.group(1))));
        } else if ((m = ONE.matcher(path)).matches() && method.equals("DELETE")) {
            templates.remove(templates.require(who, m.group(1)));
            res.setStatus(204);
        } else {
            throw new RequestException(ErrorCode.NOT_FOUND, method + " " + path + " is not part of E2B's template"
                    + " API as Crucible serves it (docs/e2b.md)");
        }
    }

    private void request(HttpServletRequest req, HttpServletResponse res, String owner) throws IOException {
        JsonNode b = body(req);
        String full = b.path("name").asString(b.path("alias").asString(""));
        String name = full.contains(":") ? full.substring(0, full.indexOf(':')) : full;
        if (!name.matches("[a-z0-9][a-z0-9._-]{0,127}")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a template name is lower-case letters, digits,"
                    + " '.', '_' and '-' (optionally ':tag'), got '" + full + "'");
        }
        Templates.Template t = templates.named(owner, name, b.path("cpuCount").asInt(2),
                b.path("memoryMB").asInt(1024));
        Templates.Build build = t.newBuild();
        List<String> tags = new ArrayList<>();
        if (full.contains(":")) {
            tags.add(full.substring(full.indexOf(':') + 1));
        }
        b.path("tags").forEach(tag -> tags.add(tag.asString()));
        build.tags.addAll(tags);
        ObjectNode answer = json.createObjectNode().put("templateID", t.id).put("buildID", build.id);
        answer.putArray("aliases").add(name);
        answer.putArray("names").add(name);
        ArrayNode tagList = answer.putArray("tags");
        tags.forEach(tagList::add);
        answer.put("public", false);
        write(res, 202, answer);
    }

    private void start(HttpServletRequest req, HttpServletResponse res, String owner, String id, String buildId)
            throws IOException {
        Templates.Template t = templates.require(owner, id);
        Templates.Build build = t.build(buildId);
        JsonNode b = body(req);
        String from = b.path("fromImage").asString("");
        if (from.isEmpty() && b.hasNonNull("fromTemplate")) {
            String base = b.get("fromTemplate").asString();
            from = imageOf(owner, base).orElseThrow(() -> new RequestException(ErrorCode.INVALID_REQUEST,
                    "fromTemplate '" + base + "' is not a built template of this token"));
        }
        if (from.isEmpty()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a build needs fromImage (an image of this server's"
                    + " store) or fromTemplate");
        }
        synchronized (build) {
            if (build.started) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "build " + buildId + " was started already");
            }
            build.started = true;
        }
        String base = from;
        try {
            builds.execute(() -> TemplateBuild.run(builder, t, build, b, base, uploads, scratch,
                    List.copyOf(build.tags), cache));
        } catch (RejectedExecutionException e) {
            synchronized (build) {
                build.started = false;
            }
            throw new RequestException(ErrorCode.TOO_MANY_REQUESTS, "one template build runs at a time and "
                    + QUEUED + " wait: try again when one has ended");
        }
        res.setStatus(202);
    }

    private void status(HttpServletRequest req, HttpServletResponse res, String owner, String id, String buildId)
            throws IOException {
        Templates.Build build = templates.require(owner, id).build(buildId);
        int offset;
        try {
            offset = Integer.parseInt(Optional.ofNullable(req.getParameter("logsOffset")).orElse("0"));
        } catch (NumberFormatException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "logsOffset is a number");
        }
        Templates.Status status = build.status; // read before the logs: a finished build's logs are all there
        ObjectNode answer = json.createObjectNode().put("templateID", id).put("buildID", buildId)
                .put("status", status.wire());
        ArrayNode entries = answer.putArray("logEntries");
        ArrayNode logs = answer.putArray("logs");
        for (Templates.LogEntry e : build.logsFrom(offset)) {
            ObjectNode entry = entries.addObject().put("timestamp", e.timestamp().toString()).put("level", e.level())
                    .put("message", e.message());
            if (e.step() != null) {
                entry.put("step", e.step());
            }
            logs.add(e.message());
        }
        if (status == Templates.Status.ERROR) {
            answer.putObject("reason").put("message", build.failure).put("step", build.failedStep);
        }
        write(res, 200, answer);
    }

    private void tags(HttpServletRequest req, HttpServletResponse res, String owner, String method)
            throws IOException {
        JsonNode b = body(req);
        List<String> tags = new ArrayList<>();
        b.path("tags").forEach(tag -> tags.add(tag.asString()));
        if (method.equals("POST")) {
            String target = b.path("target").asString("");
            Templates.Template t = templates.require(owner, target);
            String from = target.contains(":") ? target.substring(target.indexOf(':') + 1) : "default";
            String buildId;
            synchronized (t) {
                buildId = t.tags.get(from);
                if (buildId == null) {
                    throw new RequestException(ErrorCode.NOT_FOUND, "template '" + target + "' has no build");
                }
                tags.forEach(tag -> t.tags.put(tag, buildId));
            }
            ObjectNode answer = json.createObjectNode().put("buildID", buildId);
            ArrayNode list = answer.putArray("tags");
            tags.forEach(list::add);
            write(res, 201, answer);
        } else if (method.equals("DELETE")) {
            Templates.Template t = templates.require(owner, b.path("name").asString(""));
            synchronized (t) {
                tags.forEach(t.tags::remove);
            }
            res.setStatus(204);
        } else {
            throw new RequestException(ErrorCode.METHOD_NOT_ALLOWED, method + " /templates/tags");
        }
    }

    private ObjectNode describe(Templates.Template t) {
        ObjectNode o = json.createObjectNode().put("templateID", t.id);
        o.putArray("aliases").add(t.name);
        o.putArray("names").add(t.name);
        o.put("cpuCount", t.cpuCount).put("memoryMB", t.memoryMb).put("public", false);
        synchronized (t) {
            String latest = t.tags.get("default");
            o.put("buildID", latest == null ? "" : latest);
            ArrayNode builds = o.putArray("builds");
            for (Map.Entry<String, Templates.Build> e : t.builds.entrySet()) {
                builds.addObject().put("buildID", e.getKey()).put("status", e.getValue().status.wire())
                        .put("createdAt", e.getValue().created.toString()).put("cpuCount", t.cpuCount)
                        .put("memoryMB", t.memoryMb);
            }
        }
        return o;
    }

    private JsonNode body(HttpServletRequest req) throws IOException {
        byte[] bytes = req.getInputStream().readNBytes((1 << 20) + 1);
        if (bytes.length > 1 << 20) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "the body is larger than 1 MiB");
        }
        JsonNode node = bytes.length == 0 ? json.createObjectNode() : json.readTree(bytes);
        if (node == null || !node.isObject()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "the body is not a JSON object");
        }
        return node;
    }

    private void write(HttpServletResponse res, int status, JsonNode body) throws IOException {
        res.setStatus(status);
        res.setContentType("application/json");
        res.getOutputStream().write(json.writeValueAsBytes(body));
    }

    /** Stops taking builds; a running one is interrupted (nothing of it is named). */
    @Override
    public void close() {
        builds.shutdownNow();
    }
}
