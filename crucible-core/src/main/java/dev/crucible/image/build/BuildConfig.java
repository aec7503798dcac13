package dev.crucible.image.build;

import dev.crucible.image.spec.Image;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What the config steps of one build have said so far, over the base image's config: the environment (the image's
 * and the build's arguments apart), the working directory, user, start command, ports and labels. Applied to the
 * base config's {@code config} object when the image is committed; a field no step set stays as the base had it.
 * Not thread-safe: one build's.
 */
final class BuildConfig {
    private final Map<String, String> env = new LinkedHashMap<>();
    private final Map<String, String> args = new LinkedHashMap<>();
    private final Map<String, String> labels = new LinkedHashMap<>();
    private final TreeSet<String> exposed = new TreeSet<>();
    private boolean envChanged;
    private String workdir;
    private boolean workdirChanged;
    private String user;
    private List<String> cmd;
    private List<String> entrypoint;

    /** @param defaultWorkdir where steps run when the base image names no {@code WorkingDir} (null: the sandbox's) */
    BuildConfig(Image base, String defaultWorkdir) {
        for (String entry : base.env()) {
            int eq = entry.indexOf('=');
            if (eq > 0 && entry.indexOf('\0') < 0) {
                env.put(entry.substring(0, eq), entry.substring(eq + 1));
            }
        }
        workdir = base.workingDir() == null || base.workingDir().isEmpty() ? defaultWorkdir : base.workingDir();
    }

    /** Takes in a config step; returns false for a step that changes the root instead. */
    boolean apply(BuildStep step) {
        switch (step) {
            case BuildStep.Env e -> {
                env.put(e.name(), e.value());
                envChanged = true;
            }
            case BuildStep.Arg a -> args.put(a.name(), a.value());
            case BuildStep.Workdir w -> {
                workdir = resolve(w.path());
                workdirChanged = true;
            }
            case BuildStep.User u -> user = u.user();
            case BuildStep.Cmd c -> cmd = c.argv();
            case BuildStep.Entrypoint e -> {
                entrypoint = e.argv();
                if (cmd == null) {
                    cmd = List.of(); // Docker: a new ENTRYPOINT drops the base image's CMD
                }
            }
            case BuildStep.Expose p -> exposed.add(p.port().contains("/") ? p.port() : p.port() + "/tcp");
            case BuildStep.Label l -> labels.put(l.name(), l.value());
            case BuildStep.Run r -> {
                return false;
            }
            case BuildStep.Copy c -> {
                return false;
            }
        }
        return true;
    }

    /** {@code path} made absolute against the working directory ({@code /} when none), without {@code .} parts. */
    String resolve(String path) {
        String base = workdir == null ? "/" : workdir;
        String joined = path.startsWith("/") ? path : base + "/" + path;
        List<String> parts = new ArrayList<>();
        for (String part : joined.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!parts.isEmpty()) {
                    parts.removeLast();
                }
                continue;
            }
            parts.add(part);
        }
        return "/" + String.join("/", parts);
    }

    /** The working directory a step runs in, or null for the sandbox's own ({@code /workspace}). */
    String workdir() {
        return workdir;
    }

    /** What a {@link BuildStep.Run} sees: the build's arguments, then the image's environment over them. */
    Map<String, String> runEnv() {
        Map<String, String> all = new LinkedHashMap<>(args);
        all.putAll(env);
        return all;
    }

    /** Writes what the steps set into {@code config} (the image config's {@code config} object). */
    void writeTo(ObjectNode config) {
        if (envChanged) {
            ArrayNode list = config.putArray("Env");
            env.forEach((k, v) -> list.add(k + "=" + v));
        }
        if (workdirChanged) {
            config.put("WorkingDir", workdir);
        }
        if (user != null) {
            config.put("User", user);
        }
        if (entrypoint != null) {
            array(config, "Entrypoint", entrypoint);
        }
        if (cmd != null) {
            array(config, "Cmd", cmd);
        }
        if (!exposed.isEmpty()) {
            ObjectNode ports = config.withObjectProperty("ExposedPorts");
            exposed.forEach(p -> ports.putObject(p));
        }
        if (!labels.isEmpty()) {
            ObjectNode node = config.withObjectProperty("Labels");
            labels.forEach(node::put);
        }
    }

    private static void array(ObjectNode config, String name, List<String> values) {
        ArrayNode list = config.putArray(name);
        values.forEach(list::add);
    }
}
