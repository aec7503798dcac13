package dev.crucible.runtime;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A runtime's version as its trusted version command prints it on the host: the first version-like token, or "" when
 * there is none, the command fails or takes longer than 5 seconds.
 */
final class VersionProbe {
    private static final Pattern VERSION = Pattern.compile("\\d+(\\.\\d+)+");

    private VersionProbe() {}

    /**
     * The version {@code command} prints: from {@code versions} while the executable is unchanged, else run once on the
     * host (javac's alone costs a JVM start).
     */
    static String probe(List<String> command, VersionCache versions) {
        return versions.get(command, () -> run(command));
    }

    private static String run(List<String> command) {
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.environment().clear();
            Process p = pb.start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readNBytes(4096);
            if (!p.waitFor(5, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            Matcher m = VERSION.matcher(new String(out, StandardCharsets.UTF_8));
            return m.find() ? m.group() : "";
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }
}
