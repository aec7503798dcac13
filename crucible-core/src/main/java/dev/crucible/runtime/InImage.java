package dev.crucible.runtime;

import static dev.crucible.os.Linux.O_CLOEXEC;
import static dev.crucible.os.Linux.O_DIRECTORY;
import static dev.crucible.os.Linux.O_PATH;
import static dev.crucible.os.Linux.RESOLVE_NO_MAGICLINKS;

import dev.crucible.os.Linux;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Looks at an unpacked image as a sandbox will: paths are resolved by the kernel with the image's root as {@code /}
 * ({@code openat2} with {@code RESOLVE_IN_ROOT}), so an absolute symlink such as {@code /usr/local/bin/python3 ->
 * /usr/local/bin/python3.12} is followed inside the image, never on the host.
 */
final class InImage {
    /** What a sandbox searches when the image sets no PATH (Docker's default). */
    static final String DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    private InImage() {}

    /**
     * The image config's {@code Env} as a map (later entries win; entries without a name before '=', or with a NUL,
     * which no process environment can carry, are ignored).
     */
    static Map<String, String> env(List<String> env) {
        Map<String, String> map = new LinkedHashMap<>();
        for (String entry : env == null ? List.<String>of() : env) {
            int eq = entry.indexOf('=');
            if (eq > 0 && entry.indexOf('\0') < 0) {
                map.put(entry.substring(0, eq), entry.substring(eq + 1));
            }
        }
        return map;
    }

    /**
     * The absolute path inside the image of executable {@code exe}, searched in {@code path} (a PATH value), or empty
     * when no directory of it holds an executable regular file of that name.
     */
    static Optional<String> which(Path root, String path, String exe) {
        int rootFd;
        try {
            rootFd = Linux.openat2(-100, root.toString(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
        } catch (IOException e) {
            return Optional.empty();
        }
        try {
            for (String dir : Arrays.stream(path.split(":")).filter(d -> d.startsWith("/")).toList()) {
                String candidate = dir.endsWith("/") ? dir + exe : dir + "/" + exe;
                if (executable(rootFd, candidate)) {
                    return Optional.of(candidate);
                }
            }
            return Optional.empty();
        } finally {
            Linux.close(rootFd);
        }
    }

    private static boolean executable(int rootFd, String inImage) {
        try {
            int fd = Linux.openat2(rootFd, inImage.substring(1), O_PATH | O_CLOEXEC, 0,
                    Linux.RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
            try {
                Path opened = Path.of("/proc/self/fd/" + fd);
                return Files.isRegularFile(opened) && (Files.getPosixFilePermissions(opened).stream()
                        .anyMatch(p -> p.name().endsWith("EXECUTE")));
            } finally {
                Linux.close(fd);
            }
        } catch (IOException e) {
            return false;
        }
    }
}
