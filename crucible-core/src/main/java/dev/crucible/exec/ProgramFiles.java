package dev.crucible.exec;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A request's program and files on the host, before a sandbox sees them: checked (paths, how many, how large, their
 * encodings) and written into a fresh directory of the programs root with modes the slot uids can read. {@link Program}
 * removes them.
 */
final class ProgramFiles {
    private ProgramFiles() {}

    /**
     * Writes {@code contents} (checked by {@link #contents}) under a new directory {@code dir}: {@code src/} holds them,
     * {@code build/} is made for a compiled language. Each file written is put in {@code binds} at its place under
     * {@code /workspace}, so that a failure halfway leaves what to remove.
     */
    static void write(Path dir, Map<String, byte[]> contents, boolean compiled, Map<String, Path> binds)
            throws IOException {
        mkdir(dir);
        Path src = mkdir(dir.resolve("src"));
        for (Map.Entry<String, byte[]> e : contents.entrySet()) {
            Path file = src.resolve(e.getKey());
            if (!file.getParent().equals(src)) {
                createParents(src, file.getParent());
            }
            Files.write(file, e.getValue());
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
            binds.put("/workspace/" + e.getKey(), file);
        }
        if (compiled) {
            mkdir(dir.resolve("build"));
        }
    }

    /** A new directory name for a program: 96 random bits in hex. */
    static String freshName() {
        return HexFormat.of().formatHex(randomId());
    }

    /** Creates a directory with mode rwxr-xr-x whatever the umask: the slot uids read the program's files. */
    private static Path mkdir(Path dir) throws IOException {
        Files.createDirectory(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        return dir;
    }

    private static void createParents(Path src, Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            createParents(src, dir.getParent());
            mkdir(dir);
        }
    }

    /**
     * The program and its files by their path under {@code /workspace}, checked and decoded.
     *
     * @throws RequestException {@code too_many_files}, {@code invalid_file} (a bad, repeated or colliding path, a bad
     *     encoding) or {@code payload_too_large}
     */
    static Map<String, byte[]> contents(LanguageRuntime runtime, String code, List<FileInput> extraFiles) {
        Map<String, byte[]> contents = new LinkedHashMap<>();
        byte[] source = code.getBytes(StandardCharsets.UTF_8);
        long total = source.length;
        contents.put(runtime.fileName(), source);
        if (extraFiles != null) {
            if (extraFiles.size() > Executor.MAX_FILES) {
                throw new RequestException(ErrorCode.TOO_MANY_FILES, "at most " + Executor.MAX_FILES + " files, got "
                        + extraFiles.size());
            }
            for (FileInput f : extraFiles) {
                if (f == null) {
                    throw new RequestException(ErrorCode.INVALID_FILE, "a file entry is null");
                }
                String path = WorkspacePaths.validate(f.path());
                if (contents.containsKey(path) || contents.keySet().stream().anyMatch(
                        k -> k.startsWith(path + "/") || path.startsWith(k + "/"))) {
                    throw new RequestException(ErrorCode.INVALID_FILE, "file path '" + path
                            + "' is given twice or collides with the program file");
                }
                byte[] bytes = decode(f);
                total += bytes.length;
                contents.put(path, bytes);
            }
        }
        requireWithinCap(total);
        return contents;
    }

    /**
     * Refuses code and files of more than {@link Executor#MAX_TOTAL_BYTES} together.
     *
     * @throws RequestException {@code payload_too_large}
     */
    static void requireWithinCap(long totalBytes) {
        if (totalBytes > Executor.MAX_TOTAL_BYTES) {
            throw new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, "code and files exceed " + Executor.MAX_TOTAL_BYTES
                    + " bytes");
        }
    }

    private static byte[] decode(FileInput f) {
        String content = f.content() == null ? "" : f.content();
        if (f.encoding() != FileInput.Encoding.BASE64) {
            return content.getBytes(StandardCharsets.UTF_8);
        }
        try {
            return Base64.getDecoder().decode(content.replaceAll("\\s", ""));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_FILE, "file '" + f.path() + "' is not valid base64");
        }
    }

    private static byte[] randomId() {
        byte[] id = new byte[12];
        ThreadLocalRandom.current().nextBytes(id);
        return id;
    }
}
