package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.SandboxUnavailableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The host programs the launcher needs, found once by absolute path (never through PATH shims), and the uid this
 * process runs as.
 */
public record HostTools(Path bwrap, Path setpriv, int uid) {

    /**
     * Finds the tools.
     *
     * @throws SandboxUnavailableException naming what is missing and how to install it
     */
    public static HostTools find() {
        int uid = currentUid();
        Path bwrap = firstExecutable("bwrap");
        if (bwrap == null) {
            throw new SandboxUnavailableException("bubblewrap is not installed; install it: "
                    + (uid == 0 ? "" : "sudo ") + "apt-get install bubblewrap");
        }
        Path setpriv = firstExecutable("setpriv");
        if (uid == 0 && setpriv == null) {
            throw new SandboxUnavailableException("setpriv is not installed (needed to drop root for each sandbox);"
                    + " install it: apt-get install util-linux");
        }
        if (!Files.isExecutable(Path.of("/bin/sh"))) {
            throw new SandboxUnavailableException("/bin/sh is missing");
        }
        return new HostTools(bwrap, setpriv, uid);
    }

    static Path firstExecutable(String name) {
        for (String dir : List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    /** The real uid, from /proc/self/status. */
    static int currentUid() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return Integer.parseInt(line.substring(4).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | NumberFormatException e) {
            // fall through
        }
        throw new SandboxUnavailableException("cannot read the current uid from /proc/self/status");
    }
}
