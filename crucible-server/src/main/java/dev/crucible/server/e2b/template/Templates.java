package dev.crucible.server.e2b.template;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The templates of every token, in memory: each template its id, owner, names ({@code name} and {@code name:tag}),
 * builds, and which build each tag points at. A name resolves only for its owner; another token's template is not
 * found. Thread-safe (each template is changed under its own lock).
 */
final class Templates {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final Map<String, Template> byId = new ConcurrentHashMap<>();

    /** A build's state, as E2B names it. */
    enum Status {
        WAITING, BUILDING, READY, ERROR;

        String wire() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** One log line of a build. */
    record LogEntry(Instant timestamp, String level, String message, String step) {}

    /** One build of a template; its log grows while it runs. */
    static final class Build {
        final String id;
        final Instant created;
        final List<LogEntry> logs = new ArrayList<>();
        volatile Status status = Status.WAITING;
        volatile String image;
        volatile String failure;
        volatile String failedStep;
        volatile Instant finished;
        boolean started;
        /** The tags asked for at the request, given to the build when it succeeds. */
        final List<String> tags = new CopyOnWriteArrayList<>();

        Build(String id, Instant created) {
            this.id = id;
            this.created = created;
        }

        synchronized void log(String level, String message, String step) {
            if (logs.size() < 20_000) {
                logs.add(new LogEntry(Instant.now(), level, message, step));
            }
        }

        synchronized List<LogEntry> logsFrom(int offset) {
            return offset >= logs.size() ? List.of() : List.copyOf(logs.subList(Math.max(0, offset), logs.size()));
        }
    }

    /** One template of one token. */
    static final class Template {
        final String id;
        final String owner;
        final String name;
        final int cpuCount;
        final int memoryMb;
        final Map<String, Build> builds = new LinkedHashMap<>();
        /** tag → build id; "default" is the latest ready build. */
        final Map<String, String> tags = new LinkedHashMap<>();

        Template(String id, String owner, String name, int cpuCount, int memoryMb) {
            this.id = id;
            this.owner = owner;
            this.name = name;
            this.cpuCount = cpuCount;
            this.memoryMb = memoryMb;
        }

        synchronized Build newBuild() {
            Build b = new Build(UUID.randomUUID().toString(), Instant.now());
            builds.put(b.id, b);
            return b;
        }

        synchronized Build build(String buildId) {
            Build b = builds.get(buildId);
            if (b == null) {
                throw new RequestException(ErrorCode.NOT_FOUND, "build " + buildId + " of template " + id
                        + " not found");
            }
            return b;
        }

        /** The image the tag names (default: the latest ready build), if built. */
        synchronized Optional<String> image(String tag) {
            String buildId = tags.get(tag == null ? "default" : tag);
            Build b = buildId == null ? null : builds.get(buildId);
            return b == null || b.status != Status.READY ? Optional.empty() : Optional.of(b.image);
        }

        /** A build that succeeded: its tags (and "default") now name it. */
        synchronized void ready(Build b, List<String> newTags) {
            tags.put("default", b.id);
            for (String tag : newTags) {
                tags.put(tag, b.id);
            }
        }
    }

    /** The owner's template named {@code name} (its name before any {@code :tag}), made when missing. */
    Template named(String owner, String name, int cpuCount, int memoryMb) {
        synchronized (byId) {
            for (Template t : byId.values()) {
                if (t.owner.equals(owner) && t.name.equals(name)) {
                    return t;
                }
            }
            String id = HexFormat.of().formatHex(bytes(10));
            Template t = new Template(id, owner, name, cpuCount, memoryMb);
            byId.put(id, t);
            return t;
        }
    }

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }

    /** The owner's template by id, or by name ({@code name} or {@code name:tag}); another owner's is not found. */
    Optional<Template> find(String owner, String idOrName) {
        String name = idOrName.contains(":") ? idOrName.substring(0, idOrName.indexOf(':')) : idOrName;
        Template t = byId.get(name);
        if (t != null && t.owner.equals(owner)) {
            return Optional.of(t);
        }
        return byId.values().stream().filter(x -> x.owner.equals(owner) && x.name.equals(name)).findFirst();
    }

    /** As {@link #find}, or 404 in E2B's words. */
    Template require(String owner, String idOrName) {
        return find(owner, idOrName).orElseThrow(() -> new RequestException(ErrorCode.NOT_FOUND, "template '"
                + idOrName + "' not found"));
    }

    List<Template> of(String owner) {
        return byId.values().stream().filter(t -> t.owner.equals(owner)).toList();
    }

    void remove(Template t) {
        byId.remove(t.id);
    }
}
