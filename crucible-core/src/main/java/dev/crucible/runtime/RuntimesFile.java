package dev.crucible.runtime;

import dev.crucible.util.Once;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.dataformat.toml.TomlMapper;

/**
 * The runtimes TOML files: the built-in {@code runtimes.toml} (parsed once per process) and an optional user file whose
 * runtimes are added or replace a built-in one by {@code language}, each {@code [[runtime]]} table checked as it is
 * read. Only definitions, as written: nothing is looked up on the host here.
 */
final class RuntimesFile {
    /** Thread-safe once built; shared by the built-in file and every user file. */
    private static final Once<TomlMapper> TOML = new Once<>(() -> TomlMapper.builder().build());
    /** The built-in definitions, parsed once per process (records: immutable). */
    private static final Once<List<RuntimeDefinition>> BUILT_IN = new Once<>(RuntimesFile::parseBuiltIn);

    private RuntimesFile() {}

    /**
     * The built-in definitions with those of {@code userFile} (null for none), by language, in file order.
     *
     * @throws IllegalArgumentException with the file name and the reason when the file cannot be read or parsed
     */
    static Map<String, RuntimeDefinition> definitions(Path userFile) {
        Map<String, RuntimeDefinition> definitions = new LinkedHashMap<>();
        for (RuntimeDefinition d : BUILT_IN.get()) {
            definitions.put(d.language(), d);
        }
        if (userFile != null) {
            byte[] bytes;
            try {
                bytes = Files.readAllBytes(userFile);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read runtimes file " + userFile + ": " + e.getMessage());
            }
            for (RuntimeDefinition d : parse(bytes, userFile.toString())) {
                definitions.put(d.language(), d);
            }
        }
        return definitions;
    }

    private static List<RuntimeDefinition> parseBuiltIn() {
        try (InputStream in = RuntimesFile.class.getResourceAsStream("runtimes.toml")) {
            return List.copyOf(parse(in.readAllBytes(), "built-in runtimes.toml"));
        } catch (IOException e) {
            throw new IllegalStateException("built-in runtimes.toml is unreadable", e);
        }
    }

    private static List<RuntimeDefinition> parse(byte[] toml, String source) {
        RuntimeDefinition.File file;
        try {
            file = TOML.get().readValue(toml, RuntimeDefinition.File.class);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("invalid runtimes file " + source + ": " + e.getOriginalMessage());
        }
        if (file == null || file.runtime() == null) {
            throw new IllegalArgumentException("runtimes file " + source + " has no [[runtime]] table");
        }
        for (RuntimeDefinition d : file.runtime()) {
            if (d.language() == null || d.language().isBlank()) {
                throw new IllegalArgumentException("runtimes file " + source + ": a runtime has no language");
            }
            if (d.runCommand() == null || d.runCommand().isEmpty()) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " has no run_command");
            }
            if (d.image() != null && d.rootfs() != null) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " has both image and rootfs; keep one");
            }
            if (d.fileName() == null || d.fileName().isBlank() || d.fileName().contains("/")) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language()
                        + " needs a plain file_name");
            }
            try {
                d.runLimits();
                d.compileStepLimits();
                d.egress();
                d.tier();
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("runtimes file " + source + ": runtime " + d.language() + ": "
                        + e.getMessage());
            }
        }
        return file.runtime();
    }
}
