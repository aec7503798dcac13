package dev.crucible.runtime;

import dev.crucible.util.UserCache;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The versions the runtimes' version commands printed, kept in the {@link UserCache} ({@value #NAME}) so that a CLI
 * command does not start every compiler and interpreter of the host (javac's alone is a JVM start) to learn what an
 * earlier command learned. An entry holds while the executable's real path, size and modification time are those
 * it was learned from: a package upgrade changes them, and the version is asked again. Thread-safe.
 */
final class VersionCache {
    static final String NAME = "runtime-versions.properties";
    private static final int MAX_BYTES = 1 << 20;

    private final UserCache cache;
    private final Map<String, String> entries = new ConcurrentHashMap<>();
    private volatile boolean changed;

    VersionCache(UserCache cache) {
        this.cache = cache;
        cache.read(NAME, MAX_BYTES).ifPresent(bytes -> {
            Properties p = new Properties();
            try {
                p.load(new StringReader(new String(bytes, StandardCharsets.UTF_8)));
            } catch (IOException | IllegalArgumentException e) {
                return; // unreadable: every version is asked
            }
            p.forEach((k, v) -> entries.put(k.toString(), v.toString()));
        });
    }

    /** The remembered version of {@code command}, or {@code probe}'s answer (remembered unless empty). */
    String get(List<String> command, Supplier<String> probe) {
        String key = key(command);
        if (key == null) {
            return probe.get();
        }
        String cached = entries.get(key);
        if (cached != null) {
            return cached;
        }
        String version = probe.get();
        if (!version.isEmpty()) { // a failed probe is asked again next time
            entries.put(key, version);
            changed = true;
        }
        return version;
    }

    /** The command and what identifies its executable's build; null when the executable cannot be read. */
    private static String key(List<String> command) {
        try {
            Path exe = Path.of(command.getFirst()).toRealPath();
            BasicFileAttributes a = Files.readAttributes(exe, BasicFileAttributes.class);
            return String.join("\u001f", command) + "\u001f" + exe + "\u001f" + a.size() + "\u001f"
                    + a.lastModifiedTime().toMillis();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Writes the versions back if one was learned. */
    void save() {
        if (!changed) {
            return;
        }
        changed = false;
        Properties p = new Properties();
        p.putAll(entries);
        StringWriter text = new StringWriter();
        try {
            p.store(text, "Crucible: versions of the runtimes' executables (safe to delete)");
        } catch (IOException e) {
            return; // a StringWriter does not fail
        }
        cache.write(NAME, text.toString().getBytes(StandardCharsets.UTF_8));
    }
}
