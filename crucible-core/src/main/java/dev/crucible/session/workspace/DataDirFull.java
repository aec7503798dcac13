package dev.crucible.session.workspace;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.os.Linux;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The one place where a write under the data directory that found its file system full becomes {@code 507
 * data_dir_full}. The JDK's file calls say ENOSPC and EDQUOT only in strerror's words, {@link Linux} by errno, and the
 * tools the store runs (mkfs, mount) in their output; any of them, or a cause of one, counts.
 */
public final class DataDirFull {
    private static final List<String> WORDS = List.of("No space left on device", "Disk quota exceeded");

    private DataDirFull() {}

    /** Whether {@code e} (or a cause of it) is a file system that is full, or a quota that is reached. */
    public static boolean is(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof Linux.ErrnoException errno
                    && (errno.errno() == Linux.ENOSPC || errno.errno() == Linux.EDQUOT)) {
                return true;
            }
            String message = t.getMessage();
            if (message != null && WORDS.stream().anyMatch(message::contains)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The refusal for {@code what} (e.g. "the new session"), which was not kept because {@code dataDir}'s file system
     * is full; what was stored before is intact.
     */
    public static RequestException refusal(Path dataDir, String what) {
        String where;
        try {
            where = Files.getFileStore(dataDir) + ", which holds the data directory " + dataDir;
        } catch (IOException | RuntimeException e) {
            where = "the file system of the data directory " + dataDir;
        }
        return new RequestException(ErrorCode.DATA_DIR_FULL, "the data directory's file system is full: free space on "
                + where + "; " + what + " was not kept (nothing stored before is lost)");
    }

    /** {@link #refusal} when {@code e} says the file system is full, else {@code otherwise}. */
    public static RuntimeException orElse(IOException e, Path dataDir, String what, RuntimeException otherwise) {
        return is(e) ? refusal(dataDir, what) : otherwise;
    }
}
